module github.com/ferricbm/ferric/api-service

go 1.25

module github.com/ferricbm/ferric/deploy

go 1.25

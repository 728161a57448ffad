module github.com/ferricbm/ferric/db

go 1.25

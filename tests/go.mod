module github.com/ferricbm/ferric/tests

go 1.25

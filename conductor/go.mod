module github.com/ferricbm/ferric/conductor

go 1.25

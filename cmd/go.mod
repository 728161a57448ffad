module github.com/ferricbm/ferric/cmd

go 1.25

module github.com/ferricbm/ferric/pkg

go 1.25

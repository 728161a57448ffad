module github.com/ferricbm/ferric/rpc

go 1.25

require github.com/ferricbm/ferric/pkg v0.0.0

replace github.com/ferricbm/ferric/pkg => ../pkg

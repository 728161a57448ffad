package config

import (
	"fmt"
	"os"
)

// Defaults are the embedded single-process defaults, as the options'
// `default` tags declare them: SQLite under ./var, in-process RPC, no
// authentication, listening on 127.0.0.1:6385. [DEFAULT] host, whose
// default depends on the machine, is its hostname.
func Defaults() Config {
	var c Config
	for _, o := range options {
		// A list without a default is empty rather than nil, as loading
		// an empty value makes it, so the example loads back to Defaults.
		if !o.hasDef && o.field(&c).Type() != stringListType {
			continue
		}
		if err := set(o.field(&c), o.def); err != nil {
			panic(fmt.Sprintf("config: [%s] %s: default: %v", o.section, o.name, err))
		}
	}
	c.Default.Host = hostname()
	return c
}

func hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "localhost"
	}
	return host
}

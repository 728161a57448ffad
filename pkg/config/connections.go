package config

import (
	"strings"
	"time"
)

type Database struct {
	// Connection is "sqlite://<path>" or "mysql://user:pass@host:port/db".
	Connection string `ini:"database.connection" default:"sqlite://var/ferric.db" help:"sqlite://<path> or mysql://user:pass@host:port/dbname[?timeout=10s]; query parameters max_open_conns, max_idle_conns and conn_max_lifetime override the pool options below; ssl_ca=<PEM CA file> (and ssl_cert, ssl_key for a client certificate) make every connection TLS, the server's certificate verified against the CA and the URL's host."`
	// Each process holds its own pool: replicas × (max_pool_size +
	// max_overflow) must stay below the server's max_connections
	// (docs/scale.md).
	MaxPoolSize           int           `ini:"database.max_pool_size" default:"10" range:">0" help:"MySQL connections a process keeps open between requests (each until connection_idle_time)."`
	MaxOverflow           int           `ini:"database.max_overflow" default:"0" range:">=0" help:"MySQL connections a process may open beyond max_pool_size under load; not kept when idle. 0 (the default): requests beyond max_pool_size wait for a free connection. Every process of every service may hold max_pool_size + max_overflow: keep their sum below the server's max_connections."`
	ConnectionRecycleTime time.Duration `ini:"database.connection_recycle_time" default:"1800" range:">=0" help:"Seconds after which a MySQL connection is closed and replaced; keep it below the server's wait_timeout. 0: never."`
	ConnectionIdleTime    time.Duration `ini:"database.connection_idle_time" default:"300" range:">=0" help:"Seconds a MySQL connection may stay idle before it is closed, so the pool shrinks after a burst. 0: never."`
}

func (d Database) validate(bad report) {
	if !strings.HasPrefix(d.Connection, "sqlite://") && !strings.HasPrefix(d.Connection, "mysql://") {
		bad("connection", "must start with sqlite:// or mysql://")
	}
}

type RPC struct {
	Transport       string        `ini:"rpc.transport" default:"inprocess" choices:"inprocess,amqp" help:"inprocess (API and conductor in one process) or amqp."`
	AMQPURL         string        `ini:"rpc.amqp_url" default:"amqp://guest:guest@127.0.0.1:5672/" help:"RabbitMQ URL used by the amqp transport."`
	ResponseTimeout time.Duration `ini:"rpc.response_timeout" default:"60" range:">0" help:"How long an RPC call waits for its reply."`
}

func (r RPC) validate(bad report) {
	if r.Transport == "amqp" && !strings.HasPrefix(r.AMQPURL, "amqp://") && !strings.HasPrefix(r.AMQPURL, "amqps://") {
		bad("amqp_url", "must start with amqp:// or amqps:// when transport is amqp")
	}
}

// OsloMessagingRabbit holds the TLS options of the RabbitMQ connection.
type OsloMessagingRabbit struct {
	SSL         bool   `ini:"oslo_messaging_rabbit.ssl" help:"Connect to RabbitMQ over TLS even though [rpc] amqp_url says amqp:// (same host and port); an amqps:// URL always does."`
	SSLCAFile   string `ini:"oslo_messaging_rabbit.ssl_ca_file" help:"PEM CA bundle that verifies the broker's certificate; empty: the system's roots."`
	SSLCertFile string `ini:"oslo_messaging_rabbit.ssl_cert_file" help:"PEM client certificate presented to a broker that asks for one; needs ssl_key_file."`
	SSLKeyFile  string `ini:"oslo_messaging_rabbit.ssl_key_file" help:"PEM private key of ssl_cert_file."`
}

func (o OsloMessagingRabbit) validate(bad report) {
	checkPair(bad, "ssl_cert_file", "ssl_key_file", o.SSLCertFile, o.SSLKeyFile)
	checkCA(bad, "ssl_ca_file", o.SSLCAFile)
}

// Package rpctest names the broker test suites use: the rpc unit specs and
// the end-to-end harness read the same variable, so one setting moves every
// suite onto another RabbitMQ.
package rpctest

import "os"

// EnvAMQP names the variable holding the test broker's URL; unset, the
// suites use DefaultAMQPURL.
const EnvAMQP = "FERRIC_TEST_AMQP_URL"

// DefaultAMQPURL is the local RabbitMQ with its stock guest account.
const DefaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// AMQPURL is the broker the test suites use.
func AMQPURL() string {
	if u := os.Getenv(EnvAMQP); u != "" {
		return u
	}
	return DefaultAMQPURL
}

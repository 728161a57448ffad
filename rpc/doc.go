// Package rpc carries the conductor RPC API (api.go) between the API service
// and conductors. A Client turns ConductorAPI method calls into JSON messages
// sent over a Transport to the topic "ferric.conductor.<hostname>"; Serve
// consumes a conductor's topic and dispatches each message to its
// ConductorAPI implementation. Two transports exist: AMQP (RabbitMQ, for
// multi-process deployments) and in-process (single-process mode, no broker).
// Both carry byte-identical messages, documented in README.md so that
// non-Go schedulers can talk to conductors directly.
package rpc

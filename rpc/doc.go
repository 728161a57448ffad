// Package rpc carries the conductor RPC API, each method declared once in
// methods.go, between the API service and conductors. Method.Call turns a
// call into a JSON message sent over a Transport to the topic
// "ferric.conductor.<hostname>" of a named conductor or of the one owning a
// node (Client.ForNode); Serve consumes a conductor's topic and dispatches
// each message to the handler registered on its Mux. Two transports exist:
// AMQP (RabbitMQ, for multi-process deployments) and in-process
// (single-process mode, no broker). Both carry byte-identical messages,
// documented in README.md so that non-Go schedulers can talk to conductors
// directly.
package rpc

// Package harness runs real Ferric processes for the end-to-end suites: it
// builds the binaries once, gives each suite its own MySQL database, writes
// config files, starts processes under unique hostnames with their output
// captured to files, waits for readiness by polling, and stops exactly the
// processes it started.
package harness

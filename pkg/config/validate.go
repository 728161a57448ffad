package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"reflect"
)

// report records a problem with one option of a section bound beforehand.
type report func(option, format string, args ...any)

// sectionRules is a section whose options depend on each other in ways
// the tags cannot say.
type sectionRules interface {
	validate(bad report)
}

// Validate reports every value that cannot work, each naming its option, so
// that a bad configuration fails at start-up rather than on first use:
// first what the options' tags declare, then each section's own rules, then
// the rules across sections.
func (c Config) Validate() error {
	var problems []error
	in := func(section string) report {
		return func(option, format string, args ...any) {
			problems = append(problems, fmt.Errorf("[%s] %s: %s", section, option, fmt.Sprintf(format, args...)))
		}
	}
	for _, o := range options {
		for _, msg := range o.problems(&c) {
			in(o.section)(o.name, "%s", msg)
		}
	}
	v := reflect.ValueOf(c)
	for i, section := range sections {
		if s, ok := v.Field(i).Interface().(sectionRules); ok {
			s.validate(in(section))
		}
	}
	c.validate(in)
	return errors.Join(problems...)
}

// validate holds the rules that tie options of different sections.
func (c Config) validate(in func(section string) report) {
	if c.Default.AuthStrategy == "http_basic" && c.API.HTTPBasicAuthUserFile != "" {
		if _, err := os.Stat(c.API.HTTPBasicAuthUserFile); err != nil {
			in("api")("http_basic_auth_user_file", "%v", err)
		}
	}
	// Cutting the response of a request still waiting for its conductor
	// would turn a slow answer into a dropped connection.
	if a := c.API; a.WriteTimeout > 0 && a.WriteTimeout <= c.RPC.ResponseTimeout {
		in("api")("write_timeout", "%s must exceed [rpc] response_timeout %s", a.WriteTimeout, c.RPC.ResponseTimeout)
	}
	if c.API.EnableSSLAPI && (c.SSL.CertFile == "" || c.SSL.KeyFile == "") {
		in("ssl")("cert_file", "cert_file and key_file are required when [api] enable_ssl_api is true")
	}
	// Files given for a plain connection would be ignored, leaving the
	// operator believing the broker traffic is encrypted.
	om := c.OsloMessagingRabbit
	if c.RPC.Transport == "amqp" && !c.AMQPTLS() && om.SSLCAFile+om.SSLCertFile+om.SSLKeyFile != "" {
		in("oslo_messaging_rabbit")("ssl", "ssl_ca_file, ssl_cert_file and ssl_key_file need a TLS connection: set ssl = true or use an amqps:// [rpc] amqp_url")
	}
}

// checkPair reports a certificate given without its key or the other way
// round, and files that are not a readable, matching pair.
func checkPair(bad report, certOption, keyOption, certFile, keyFile string) {
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "":
		bad(certOption, "required when %s is set", keyOption)
	case keyFile == "":
		bad(keyOption, "required when %s is set", certOption)
	default:
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			bad(certOption, "not a usable certificate and key (%s, %s): %v", certFile, keyFile, err)
		}
	}
}

// checkCA reports a CA file that is unreadable or holds no certificate.
func checkCA(bad report, option, caFile string) {
	if caFile == "" {
		return
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		bad(option, "%v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		bad(option, "%s holds no PEM certificate", caFile)
	}
}

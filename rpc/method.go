package rpc

import (
	"context"
	"encoding/json"
	"fmt"
)

// Kind is how a method travels and when the caller gets its answer.
type Kind int

const (
	// KindCall waits for the conductor's reply.
	KindCall Kind = iota
	// KindAsync is a call the conductor answers once it has accepted the
	// work, which then goes on in the conductor (the API answers 202).
	KindAsync
	// KindPerMethod is a call that is sync or async as the vendor method
	// it runs says.
	KindPerMethod
	// KindCast gets no reply: it returns once the message is accepted for
	// delivery. Its arguments must hold no secret (casts are persistent).
	KindCast
)

// Spec is what a declaration says about a method, whatever its types.
type Spec struct {
	// Name is the method's name on the wire: Ironic's name, so operators
	// and external schedulers recognise it.
	Name string
	// Since is the API version the method arrived in.
	Since string
	Kind  Kind
	Doc   Doc

	// serve registers a handler of any arguments and result on a mux: the
	// typed half of a declaration, kept so every declared method can be
	// served from the list alone.
	serve func(mux *Mux, h anyHandler)
}

// anyHandler serves a method whatever its types: it gets the decoded
// arguments and returns the result, nil for a command or a zero result.
type anyHandler func(ctx context.Context, s Spec, args any) (any, error)

// Doc documents a method in README.md's method table. Result is empty for
// methods that return nothing, Errors for those with no typical error.
type Doc struct {
	Args, Result, Errors string
}

// declared lists every method in declaration order: what the server
// requires a handler for and the README table shows.
var declared []Spec

// Method is a declared method returning an R.
type Method[A, R any] struct{ Spec }

// Command is a declared method returning nothing (JSON null), or a cast.
type Command[A any] struct{ Spec }

func declare[A, R any](s Spec) Method[A, R] {
	m := Method[A, R]{s}
	s.serve = func(mux *Mux, h anyHandler) {
		m.Handle(mux, func(ctx context.Context, args A) (R, error) {
			res, err := h(ctx, s, args)
			r, ok := res.(R)
			if !ok && res != nil {
				return r, fmt.Errorf("%s answered %T, not %T", s.Name, res, r)
			}
			return r, err
		})
	}
	declared = append(declared, s)
	return m
}

func declareCommand[A any](s Spec) Command[A] {
	m := Command[A]{s}
	s.serve = func(mux *Mux, h anyHandler) {
		m.Handle(mux, func(ctx context.Context, args A) error {
			_, err := h(ctx, s, args)
			return err
		})
	}
	declared = append(declared, s)
	return m
}

// serveDeclared makes h serve every declared method on mux.
func serveDeclared(mux *Mux, h anyHandler) {
	for _, s := range declared {
		s.serve(mux, h)
	}
}

// Methods returns the specs of every declared method, in declaration order.
func Methods() []Spec { return append([]Spec(nil), declared...) }

// Call sends the method to the conductor at e and returns its result.
//
// Errors are *errs.Error: the conductor's own typed error (kind, message and
// status preserved), errs.KindMessagingTimeout when no reply came before the
// deadline, or errs.KindTemporaryFailure when the message could not be
// delivered (no such conductor queue, broker connection lost).
func (m Method[A, R]) Call(ctx context.Context, e Endpoint, args A) (R, error) {
	var r R
	err := e.call(ctx, m.Name, args, &r)
	return r, err
}

// Call sends the command to the conductor at e: a call that waits for the
// reply, or for a cast until the message is accepted for delivery (only a
// failure to send it is reported).
func (m Command[A]) Call(ctx context.Context, e Endpoint, args A) error {
	if m.Kind == KindCast {
		return e.cast(ctx, m.Name, args)
	}
	return e.call(ctx, m.Name, args, nil)
}

// Handle makes f serve the method on mux.
func (m Method[A, R]) Handle(mux *Mux, f func(context.Context, A) (R, error)) {
	mux.handle(m.Name, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a A
		if err := decodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return f(ctx, a)
	})
}

// Handle makes f serve the command on mux.
func (m Command[A]) Handle(mux *Mux, f func(context.Context, A) error) {
	mux.handle(m.Name, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a A
		if err := decodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return nil, f(ctx, a)
	})
}

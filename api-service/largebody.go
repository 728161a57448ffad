package apiservice

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
)

// A large body (a config drive) must keep arriving: after largeBodyGrace,
// at least largeBodyMinRate bytes a second on average. Without it, a
// client trickling a byte every few seconds held its slot for the whole
// read timeout, and four of them kept every other config-drive deploy out.
const (
	largeBodyGrace   = 5 * time.Second
	largeBodyMinRate = 256 << 10
)

// largeBodies are the slots of [api] max_concurrent_large_bodies, and how
// many of them each client address holds. A client holding its share (a
// quarter of them, at least one) may take more only while more than a
// share stays free for the others: one client alone may use nearly all of
// them, but no single sender can fill them all.
type largeBodies struct {
	size, perClient int

	mu    sync.Mutex
	inUse int
	held  map[string]int
}

func newLargeBodies(n int) *largeBodies {
	n = max(n, 1)
	return &largeBodies{size: n, perClient: max(n/4, 1), held: map[string]int{}}
}

// take gives client a slot, or refuses with 503; release returns it.
func (l *largeBodies) take(client string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	free := l.size - l.inUse
	switch {
	case free == 0:
		return nil, errs.New(errs.KindTemporaryFailure,
			"Too many large provisioning requests are being received at once (max_concurrent_large_bodies); retry later.")
	case l.held[client] >= l.perClient && free <= l.perClient:
		return nil, errs.New(errs.KindTemporaryFailure,
			"Too many large provisioning requests from this client are being received at once; retry later.")
	}
	l.inUse++
	l.held[client]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inUse--
		if l.held[client]--; l.held[client] == 0 {
			delete(l.held, client)
		}
	}, nil
}

// errSlowBody: the client sent its large body below the minimum rate.
var errSlowBody = errors.New("request body arrived too slowly")

// steadyBody reads a large body under a read deadline that moves with
// what has arrived (largeBodyGrace plus the time the bytes read so far
// would take at largeBodyMinRate), never past the whole request's read
// timeout.
type steadyBody struct {
	body     io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	deadline time.Time // the read timeout's; zero: none
	n        int64
}

func newSteadyBody(w http.ResponseWriter, r *http.Request, readTimeout time.Duration) *steadyBody {
	s := &steadyBody{body: r.Body, rc: http.NewResponseController(w), start: time.Now()}
	if readTimeout > 0 {
		s.deadline = s.start.Add(readTimeout)
	}
	return s
}

func (s *steadyBody) Read(p []byte) (int, error) {
	due := s.start.Add(largeBodyGrace + time.Duration(float64(s.n)/largeBodyMinRate*float64(time.Second)))
	if !s.deadline.IsZero() && s.deadline.Before(due) {
		due = s.deadline
	}
	if err := s.rc.SetReadDeadline(due); err != nil {
		return 0, err
	}
	n, err := s.body.Read(p)
	s.n += int64(n)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, errSlowBody
	}
	return n, err
}

func (s *steadyBody) Close() error { return s.body.Close() }

package rpc

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
)

const (
	// exchangeName is the durable topic exchange every message goes
	// through; the routing key is the conductor's topic.
	exchangeName  = "ferric"
	directReplyTo = "amq.rabbitmq.reply-to"
	contentType   = "application/json"

	dialTimeout         = 5 * time.Second
	heartbeat           = 10 * time.Second
	closeTimeout        = 2 * time.Second
	replyPublishTimeout = 5 * time.Second
	reconnectMinDelay   = 100 * time.Millisecond
	reconnectMaxDelay   = 10 * time.Second

	// A conductor remembers the messages it handled for rememberHandledFor,
	// at most maxRemembered of them, to recognise redeliveries. Redelivery
	// follows a lost connection within seconds (reconnecting backs off to
	// at most reconnectMaxDelay); a call's request expires with its
	// deadline (60 s by default).
	rememberHandledFor = 10 * time.Minute
	maxRemembered      = 8192
)

// connectionSeq makes connection names unique within the process, so an
// operator (or a test) can tell this process's connections apart.
var connectionSeq atomic.Int64

// NewAMQP connects to the RabbitMQ broker at url ("amqp://user:pass@host:port/vhost")
// and returns a Transport over it. The first connection is made before
// NewAMQP returns, so a wrong URL or credentials fail here; after that the
// transport reconnects by itself (exponential backoff, capped), re-declares
// its topology and resumes consuming.
//
// Delivery guarantees (see README.md): a cast returns nil only once the
// broker confirmed it persisted the message in the conductor's durable queue;
// a conductor acknowledges a message only after handling it, so a message
// being handled when a conductor or the broker dies is delivered again.
// Delivery is therefore at least once; a conductor recognises a message it
// has already handled by its message id and does not run it again, and a
// call redelivered from a lost process is answered TemporaryFailure, not run.
//
// Calls are published transient: their arguments may hold credentials
// (driver_info, agent tokens, config drives), which must not reach the
// broker's disk, and a call outliving a broker restart has nobody waiting
// for its reply anyway. Casts, which carry node ids only, are persistent.
func NewAMQP(url string, log logrus.FieldLogger, opts ...AMQPOption) (Transport, error) {
	if log == nil {
		log = logging.Discard()
	}
	var o amqpOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.tls != nil {
		var err error
		if url, err = tlsURL(url); err != nil {
			return nil, err
		}
	}
	host, _ := os.Hostname()
	t := &amqpTransport{
		url:       url,
		tls:       o.tls,
		name:      fmt.Sprintf("ferric-rpc %s pid %d #%d", host, os.Getpid(), connectionSeq.Add(1)),
		log:       log.WithField("component", "rpc-amqp"),
		ready:     make(chan struct{}),
		listeners: map[*amqpListener]struct{}{},
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	s, err := t.connect()
	if err != nil {
		return nil, fmt.Errorf("connect to message broker: %w", err)
	}
	t.attach(s)
	go t.supervise(s)
	return t, nil
}

// AMQPOption adjusts how NewAMQP connects.
type AMQPOption func(*amqpOptions)

type amqpOptions struct{ tls *tls.Config }

// WithTLS connects over TLS with cfg (its CA bundle and client key pair):
// an amqps:// URL uses it, and an amqp:// URL is taken as TLS to the same
// host and port, as oslo.messaging's ssl option does.
func WithTLS(cfg *tls.Config) AMQPOption {
	return func(o *amqpOptions) { o.tls = cfg }
}

// tlsURL turns an amqp:// URL into the amqps:// URL of the same host and
// port.
func tlsURL(s string) (string, error) {
	u, err := amqp.ParseURI(s)
	if err != nil {
		// The parse error may repeat the URL, password included.
		return "", errors.New("rpc: malformed AMQP URL")
	}
	u.Scheme = "amqps"
	return u.String(), nil
}

type amqpTransport struct {
	url  string
	tls  *tls.Config
	name string
	log  logrus.FieldLogger

	mu sync.Mutex
	// cur is the live session, nil while reconnecting; ready is closed
	// when cur is set and replaced when it is lost.
	cur       *session
	ready     chan struct{}
	listeners map[*amqpListener]struct{}
	closed    bool

	closing chan struct{}
	done    chan struct{} // supervisor exited
}

// session is one broker connection with its channels. When anything in it
// fails the whole session is discarded and a new one is made: simpler and
// more predictable than repairing single channels.
type session struct {
	conn  *amqp.Connection
	pub   *amqp.Channel // confirm mode; also consumes direct replies
	reply *amqp.Channel // servers' replies (no confirms: a reply is best effort)

	// pubMu serialises publishing on pub, so that the delivery tag read
	// before a publish is the one the broker confirms. It is never held
	// by the goroutine reading confirms.
	pubMu sync.Mutex

	mu      sync.Mutex
	closed  bool
	pending map[uint64]*publishing // by delivery tag
	byID    map[string]*publishing // by message id, for basic.return
	calls   map[string]chan []byte // by correlation id

	dead     chan struct{}
	killOnce sync.Once
	onDead   func(*session)
	log      logrus.FieldLogger
}

type publishing struct {
	id       string
	topic    string
	returned bool
	done     chan error // buffered: the confirm never waits for the publisher
}

func (t *amqpTransport) connect() (*session, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(t.name)
	conn, err := amqp.DialConfig(t.url, amqp.Config{
		Properties: props,
		Heartbeat:  heartbeat,
		Locale:     "en_US",
		Dial:       amqp.DefaultDial(dialTimeout),
		// Nil for amqps:// means the system's roots, as amqp091 does.
		TLSClientConfig: t.tls,
	})
	if err != nil {
		return nil, err
	}
	s := &session{
		conn:    conn,
		pending: map[uint64]*publishing{},
		byID:    map[string]*publishing{},
		calls:   map[string]chan []byte{},
		dead:    make(chan struct{}),
		onDead:  t.detach,
		log:     t.log,
	}
	if err := s.setup(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

func (s *session) setup() error {
	var err error
	if s.pub, err = s.conn.Channel(); err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	if err := s.pub.Confirm(false); err != nil {
		return fmt.Errorf("enable publisher confirms: %w", err)
	}
	if err := s.pub.ExchangeDeclare(exchangeName, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", exchangeName, err)
	}
	// Unbuffered: the library hands over a return before it processes the
	// confirm that follows it, so one goroutine reading both sees them in
	// order and knows a confirmed message was unroutable.
	returns := s.pub.NotifyReturn(make(chan amqp.Return))
	confirms := s.pub.NotifyPublish(make(chan amqp.Confirmation, 128))
	replies, err := s.pub.Consume(directReplyTo, "", true, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume direct replies: %w", err)
	}
	if s.reply, err = s.conn.Channel(); err != nil {
		return fmt.Errorf("open reply channel: %w", err)
	}
	connClosed := s.conn.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		err := <-connClosed
		s.kill(err)
	}()
	s.watch(s.pub)
	s.watch(s.reply)
	go s.dispatchConfirms(returns, confirms)
	go s.dispatchReplies(replies)
	return nil
}

// watch discards the session when ch is closed by the broker (a channel
// error); a close we asked for is not an error.
func (s *session) watch(ch *amqp.Channel) {
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		if err, ok := <-closed; ok && err != nil {
			s.kill(err)
		}
	}()
}

func (s *session) dispatchConfirms(returns <-chan amqp.Return, confirms <-chan amqp.Confirmation) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			s.mu.Lock()
			if p := s.byID[r.MessageId]; p != nil {
				p.returned = true
			}
			s.mu.Unlock()
		case c, ok := <-confirms:
			if !ok {
				s.kill(nil)
				return
			}
			s.mu.Lock()
			p := s.pending[c.DeliveryTag]
			delete(s.pending, c.DeliveryTag)
			if p != nil {
				delete(s.byID, p.id)
			}
			s.mu.Unlock()
			switch {
			case p == nil:
			case !c.Ack:
				p.done <- errs.New(errs.KindTemporaryFailure, "The message broker refused the message for %s; please retry.", p.topic)
			case p.returned:
				p.done <- unroutable(p.topic)
			default:
				p.done <- nil
			}
		}
	}
}

func (s *session) dispatchReplies(replies <-chan amqp.Delivery) {
	for d := range replies {
		s.mu.Lock()
		ch := s.calls[d.CorrelationId]
		delete(s.calls, d.CorrelationId)
		s.mu.Unlock()
		if ch != nil {
			ch <- d.Body
		}
	}
}

// kill discards the session: every publish awaiting its confirm and every
// call awaiting its reply fails with a retryable connection-lost error.
func (s *session) kill(reason *amqp.Error) {
	s.killOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		pending, calls := s.pending, s.calls
		s.pending, s.byID, s.calls = nil, nil, nil
		s.mu.Unlock()
		for _, p := range pending {
			p.done <- connectionLost()
		}
		for _, c := range calls {
			close(c)
		}
		if reason != nil {
			s.log.WithError(reason).Warn("message broker connection lost")
		}
		close(s.dead)
		s.onDead(s)
		// Not waited for: kill runs on goroutines the library may need
		// to make progress while closing.
		go func() { _ = s.conn.CloseDeadline(time.Now().Add(closeTimeout)) }()
	})
}

func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// publish sends msg to topic with the mandatory flag and waits for the
// broker's confirm: nil means the broker routed and persisted it.
func (s *session) publish(ctx context.Context, topic string, msg amqp.Publishing) error {
	p := &publishing{id: msg.MessageId, topic: topic, done: make(chan error, 1)}
	s.pubMu.Lock()
	tag := s.pub.GetNextPublishSeqNo()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.pubMu.Unlock()
		return connectionLost()
	}
	s.pending[tag] = p
	s.byID[p.id] = p
	s.mu.Unlock()
	err := s.pub.PublishWithContext(ctx, exchangeName, topic, true, false, msg)
	if err != nil {
		s.mu.Lock()
		if s.pending != nil {
			delete(s.pending, tag)
			delete(s.byID, p.id)
		}
		s.mu.Unlock()
	}
	s.pubMu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return connectionLost()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// expectReply registers a call waiting for the reply with correlation id.
func (s *session) expectReply(id string) (chan []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	ch := make(chan []byte, 1)
	s.calls[id] = ch
	return ch, true
}

func (s *session) forgetReply(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls != nil {
		delete(s.calls, id)
	}
}

// attach makes s the live session (unless it already died or the transport
// closed) and starts every listener on it.
func (t *amqpTransport) attach(s *session) {
	t.mu.Lock()
	if t.closed || s.isClosed() {
		t.mu.Unlock()
		s.kill(nil)
		return
	}
	t.cur = s
	close(t.ready)
	ls := make([]*amqpListener, 0, len(t.listeners))
	for l := range t.listeners {
		ls = append(ls, l)
	}
	t.mu.Unlock()
	for _, l := range ls {
		if err := l.start(s); err != nil {
			t.log.WithError(err).WithField("topic", l.topic).Error("cannot resume consuming after reconnecting")
		}
	}
}

func (t *amqpTransport) detach(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == s {
		t.cur = nil
		t.ready = make(chan struct{})
	}
}

func (t *amqpTransport) supervise(s *session) {
	defer close(t.done)
	for {
		select {
		case <-s.dead:
		case <-t.closing:
			s.kill(nil)
			return
		}
		select {
		case <-t.closing:
			return
		default:
		}
		t.log.Warn("reconnecting to the message broker")
		if s = t.reconnect(); s == nil {
			return
		}
		t.log.Info("reconnected to the message broker")
	}
}

// reconnect retries with exponential backoff (with jitter, so that many
// processes do not hammer a restarted broker in step) until it connects or
// the transport closes (nil).
func (t *amqpTransport) reconnect() *session {
	delay := reconnectMinDelay
	for {
		wait := delay/2 + mrand.N(delay/2+1)
		select {
		case <-t.closing:
			return nil
		case <-time.After(wait):
		}
		s, err := t.connect()
		if err == nil {
			t.attach(s)
			return s
		}
		t.log.WithError(err).WithField("retry_in", delay).Warn("cannot reconnect to the message broker")
		delay = min(delay*2, reconnectMaxDelay)
	}
}

// session waits for a live session until ctx is done.
func (t *amqpTransport) session(ctx context.Context) (*session, error) {
	for {
		t.mu.Lock()
		s, ready, closed := t.cur, t.ready, t.closed
		t.mu.Unlock()
		if closed {
			return nil, transportClosed()
		}
		if s != nil && !s.isClosed() {
			return s, nil
		}
		var dead <-chan struct{}
		if s != nil {
			dead = s.dead
		}
		select {
		case <-ready:
			if s != nil {
				// s died but is not detached yet; wait until it is.
				<-dead
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.closing:
			return nil, transportClosed()
		}
	}
}

// Check waits for a live broker session until ctx is done.
func (t *amqpTransport) Check(ctx context.Context) error {
	if _, err := t.session(ctx); err != nil {
		return fmt.Errorf("message broker: %w", err)
	}
	return nil
}

func newMessageID() string { return rand.Text() }

func (t *amqpTransport) Call(ctx context.Context, topic string, request []byte) ([]byte, error) {
	for {
		s, err := t.session(ctx)
		if err != nil {
			return nil, err
		}
		id := newMessageID()
		replies, ok := s.expectReply(id)
		if !ok {
			continue // lost before anything was sent: safe to use the next session
		}
		msg := amqp.Publishing{
			ContentType:   contentType,
			DeliveryMode:  amqp.Transient,
			MessageId:     id,
			CorrelationId: id,
			ReplyTo:       directReplyTo,
			Timestamp:     time.Now(),
			Body:          request,
		}
		if deadline, ok := ctx.Deadline(); ok {
			// The broker discards the request once nobody waits for it.
			msg.Expiration = strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 1), 10)
		}
		if err := s.publish(ctx, topic, msg); err != nil {
			s.forgetReply(id)
			return nil, err
		}
		select {
		case r, ok := <-replies:
			if !ok {
				return nil, connectionLost()
			}
			return r, nil
		case <-ctx.Done():
			s.forgetReply(id)
			return nil, ctx.Err()
		}
	}
}

// Cast retries on a new connection when the connection drops before the
// broker confirmed the message: the message may then arrive twice, with the
// same message id, so the conductor handles it once; an accepted cast is
// never lost. A cast is persistent: its arguments must hold no secrets.
func (t *amqpTransport) Cast(ctx context.Context, topic string, request []byte) error {
	id := newMessageID()
	for {
		s, err := t.session(ctx)
		if err != nil {
			return err
		}
		err = s.publish(ctx, topic, amqp.Publishing{
			ContentType:  contentType,
			DeliveryMode: amqp.Persistent,
			MessageId:    id,
			Timestamp:    time.Now(),
			Body:         request,
		})
		if errors.Is(err, errConnectionLost) {
			continue
		}
		return err
	}
}

// reply sends a call's reply on the live session, which need not be the one
// the request came in on: the caller's connection may have survived ours.
func (t *amqpTransport) reply(replyTo, correlationID string, body []byte) {
	t.mu.Lock()
	s := t.cur
	t.mu.Unlock()
	if s == nil {
		t.log.WithField("correlation_id", correlationID).Warn("dropping RPC reply: not connected to the message broker")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), replyPublishTimeout)
	defer cancel()
	err := s.reply.PublishWithContext(ctx, "", replyTo, false, false, amqp.Publishing{
		ContentType:   contentType,
		CorrelationId: correlationID,
		Timestamp:     time.Now(),
		Body:          body,
	})
	if err != nil {
		t.log.WithError(err).WithField("correlation_id", correlationID).Warn("cannot send RPC reply")
	}
}

func (t *amqpTransport) Listen(ctx context.Context, topic string, maxInFlight int, h Handler) (func(), error) {
	maxInFlight = max(maxInFlight, 1)
	l := &amqpListener{
		t:         t,
		topic:     topic,
		prefetch:  maxInFlight,
		h:         h,
		handled:   handledLog{byID: map[string]*handledMessage{}},
		sem:       make(chan struct{}, maxInFlight),
		quit:      make(chan struct{}),
		consumers: map[*session]*consumer{},
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, transportClosed()
	}
	t.listeners[l] = struct{}{}
	t.mu.Unlock()
	for {
		s, err := t.session(ctx)
		if err != nil {
			l.stop()
			return nil, fmt.Errorf("listen on %s: %w", topic, err)
		}
		err = l.start(s)
		if err == nil {
			return l.stop, nil
		}
		if !s.isClosed() {
			l.stop()
			return nil, fmt.Errorf("listen on %s: %w", topic, err)
		}
	}
}

func (t *amqpTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	ls := make([]*amqpListener, 0, len(t.listeners))
	for l := range t.listeners {
		ls = append(ls, l)
	}
	t.mu.Unlock()
	for _, l := range ls {
		l.stop()
	}
	close(t.closing)
	<-t.done
	return nil
}

// amqpListener consumes one conductor queue, on whichever session is live.
type amqpListener struct {
	t        *amqpTransport
	topic    string
	prefetch int
	h        Handler
	handled  handledLog
	// sem bounds handlers across sessions: those of a lost session may
	// still run while the next session's deliveries arrive.
	sem  chan struct{}
	quit chan struct{}

	mu        sync.Mutex
	stopped   bool
	consumers map[*session]*consumer
	loops     sync.WaitGroup
	inFlight  sync.WaitGroup
	stopOnce  sync.Once
}

type consumer struct {
	ch  *amqp.Channel
	tag string
}

// start declares the conductor's durable queue, binds it and consumes it on
// s (once per session).
func (l *amqpListener) start(s *session) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil
	}
	if _, ok := l.consumers[s]; ok {
		return nil
	}
	if s.isClosed() {
		return connectionLost()
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	deliveries, tag, err := l.consume(ch)
	if err != nil {
		_ = ch.Close()
		return err
	}
	l.consumers[s] = &consumer{ch: ch, tag: tag}
	s.watch(ch)
	l.loops.Add(1)
	go l.run(s, deliveries)
	return nil
}

func (l *amqpListener) consume(ch *amqp.Channel) (<-chan amqp.Delivery, string, error) {
	if err := ch.Qos(l.prefetch, 0, false); err != nil {
		return nil, "", fmt.Errorf("set prefetch: %w", err)
	}
	if _, err := ch.QueueDeclare(l.topic, true, false, false, false, nil); err != nil {
		return nil, "", fmt.Errorf("declare queue %s: %w", l.topic, err)
	}
	if err := ch.QueueBind(l.topic, l.topic, exchangeName, false, nil); err != nil {
		return nil, "", fmt.Errorf("bind queue %s: %w", l.topic, err)
	}
	tag := "ferric-" + newMessageID()
	deliveries, err := ch.Consume(l.topic, tag, false, false, false, false, nil)
	if err != nil {
		return nil, "", fmt.Errorf("consume queue %s: %w", l.topic, err)
	}
	return deliveries, tag, nil
}

func (l *amqpListener) run(s *session, deliveries <-chan amqp.Delivery) {
	defer func() {
		l.mu.Lock()
		delete(l.consumers, s)
		l.mu.Unlock()
		l.loops.Done()
	}()
	for {
		var d amqp.Delivery
		var ok bool
		select {
		case d, ok = <-deliveries:
			if !ok {
				return
			}
		case <-l.quit:
			return
		}
		select {
		case l.sem <- struct{}{}:
		case <-l.quit:
			return // unacknowledged: the broker requeues it when the channel closes
		case <-s.dead:
			return // the broker has requeued it already
		}
		l.inFlight.Add(1)
		go func() {
			defer l.inFlight.Done()
			defer func() { <-l.sem }()
			l.handle(d)
		}()
	}
}

// handle acknowledges only after the handler finished and its reply was
// sent, so a message whose handling was cut short is delivered again. A
// message handled before (its acknowledgement was lost with the connection,
// or a caller published it again) is not run again: it waits for the first
// handling to finish if that still runs, and gets that handling's reply.
//
// A call the broker delivers again whose id this process does not know was
// received by a process that died before acknowledging it, and may have
// run there: it is answered TemporaryFailure rather than run a second time,
// and the caller decides whether to retry. Casts carry node ids only and
// their handlers check the node's state, so they run again.
func (l *amqpListener) handle(d amqp.Delivery) {
	m, first := l.handled.begin(d.MessageId, time.Now())
	var out []byte
	switch {
	case first && d.Redelivered && d.ReplyTo != "":
		out = encodeReply(nil, errs.New(errs.KindTemporaryFailure,
			"The conductor serving this request stopped while handling it; it may or may not have run. Please check and retry."))
		m.finish(out)
		l.t.log.WithFields(logrus.Fields{"topic": l.topic, "message_id": d.MessageId}).
			Warn("RPC call delivered again after its first receiver was lost; answering it as a temporary failure instead of running it again")
	case first:
		out = l.h(d.Body)
		m.finish(out)
	default:
		<-m.done
		out = m.reply
		l.t.log.WithFields(logrus.Fields{"topic": l.topic, "message_id": d.MessageId}).
			Info("RPC message delivered again; answering it from its first handling")
	}
	if d.ReplyTo != "" && out != nil {
		l.t.reply(d.ReplyTo, d.CorrelationId, out)
	}
	if err := d.Ack(false); err != nil {
		l.t.log.WithError(err).WithField("topic", l.topic).Info("cannot acknowledge RPC message; the broker will deliver it again")
	}
}

func (l *amqpListener) stop() {
	l.stopOnce.Do(func() {
		l.t.mu.Lock()
		delete(l.t.listeners, l)
		l.t.mu.Unlock()
		l.mu.Lock()
		l.stopped = true
		cs := make([]*consumer, 0, len(l.consumers))
		for _, c := range l.consumers {
			cs = append(cs, c)
		}
		l.mu.Unlock()
		close(l.quit)
		for _, c := range cs {
			_ = c.ch.Cancel(c.tag, false)
		}
		l.loops.Wait()
		l.inFlight.Wait()
		for _, c := range cs {
			_ = c.ch.Close()
		}
	})
}

// handledLog is a listener's record of the messages it handled recently,
// by message id, bounded in age and number.
type handledLog struct {
	mu    sync.Mutex
	byID  map[string]*handledMessage
	order []*handledMessage // oldest first
}

type handledMessage struct {
	id    string
	at    time.Time
	done  chan struct{} // closed once reply is set
	reply []byte
}

// begin returns the record of message id and whether this is its first
// delivery, whose handler the caller runs and then finishes the record
// with. A message without an id is never recognised.
func (h *handledLog) begin(id string, now time.Time) (*handledMessage, bool) {
	m := &handledMessage{id: id, at: now, done: make(chan struct{})}
	if id == "" {
		return m, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.byID[id]; ok {
		return old, false
	}
	for len(h.order) > 0 && (len(h.order) >= maxRemembered || now.Sub(h.order[0].at) > rememberHandledFor) {
		delete(h.byID, h.order[0].id)
		h.order[0] = nil
		h.order = h.order[1:]
	}
	h.byID[id] = m
	h.order = append(h.order, m)
	return m, true
}

func (m *handledMessage) finish(reply []byte) {
	m.reply = reply
	close(m.done)
}

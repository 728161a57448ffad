package iscsi

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a session. The zero value works against a target without CHAP.
type Options struct {
	// InitiatorName is this initiator's IQN; default "iqn.2004-10.io.ferricbm:<hostname>".
	InitiatorName string
	// CHAPUser and CHAPSecret enable one-way CHAP. The secret is never logged nor put in errors.
	CHAPUser   string
	CHAPSecret string
	// DialTimeout bounds the TCP connect (default 10s); LoginTimeout the whole login (15s).
	DialTimeout  time.Duration
	LoginTimeout time.Duration
	// CommandTimeout bounds every SCSI command from submission to status, and every socket
	// write (default 30s). A command that exceeds it fails the session: at error recovery
	// level 0 a connection with a lost task cannot be trusted.
	CommandTimeout time.Duration
	// SyncTimeout replaces CommandTimeout for SYNCHRONIZE CACHE, which flushes everything
	// written (default 10m).
	SyncTimeout time.Duration
	// LogoutTimeout bounds the logout exchange in Close (default 5s).
	LogoutTimeout time.Duration
	// QueueDepth is the number of SCSI commands kept in flight (default 32); the target's
	// command window (MaxCmdSN) may lower it at any time.
	QueueDepth int
	// MaxTransferLength is the largest data transfer of one SCSI command in bytes, rounded
	// down to whole blocks (default 1 MiB). Fewer, larger commands cost the target less
	// per byte, provided it reuses its command buffers: the deploy agent's tgtd does
	// (deploy/agent/tgt raises glibc's mmap threshold), while a stock tgtd maps and
	// faults in a fresh buffer for every command of 128 KiB or more, so against one
	// 64 KiB commands are cheaper.
	MaxTransferLength int
	// FlushInterval makes CopyFrom ask the target to flush its cache (SYNCHRONIZE CACHE)
	// in the background after every FlushInterval bytes, so the target's disk writes
	// overlap the transfer instead of all waiting for the final Sync, and the ramdisk
	// never holds more than about this much dirty data. Default 256 MiB; negative
	// disables it.
	FlushInterval int64
	// MaxRecvDataSegmentLength is declared to the target: the largest Data-In segment
	// accepted (default 256 KiB).
	MaxRecvDataSegmentLength int
}

// String keeps the CHAP secret out of logs that print the options.
func (o Options) String() string {
	secret := ""
	if o.CHAPSecret != "" {
		secret = "******"
	}
	return fmt.Sprintf("{InitiatorName:%s CHAPUser:%s CHAPSecret:%s QueueDepth:%d MaxTransferLength:%d}",
		o.InitiatorName, o.CHAPUser, secret, o.QueueDepth, o.MaxTransferLength)
}

// GoString covers %#v, which does not use String.
func (o Options) GoString() string { return "iscsi.Options" + o.String() }

func (o Options) withDefaults() Options {
	if o.InitiatorName == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		o.InitiatorName = "iqn.2004-10.io.ferricbm:" + host
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.DialTimeout, 10*time.Second)
	def(&o.LoginTimeout, 15*time.Second)
	def(&o.CommandTimeout, 30*time.Second)
	def(&o.SyncTimeout, 10*time.Minute)
	def(&o.LogoutTimeout, 5*time.Second)
	if o.QueueDepth <= 0 {
		o.QueueDepth = 32
	}
	if o.MaxTransferLength <= 0 {
		o.MaxTransferLength = 1 << 20
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 256 << 20
	}
	if o.MaxRecvDataSegmentLength <= 0 {
		o.MaxRecvDataSegmentLength = 256 << 10
	}
	o.MaxRecvDataSegmentLength = min(max(o.MaxRecvDataSegmentLength, 512), maxNegotiableLength)
	return o
}

// Session is a logged-in iSCSI session with one connection (error recovery level 0).
// Its methods are safe for concurrent use.
type Session struct {
	conn   net.Conn
	br     *bufio.Reader
	opts   Options
	target string
	portal string
	params Params

	// wmu serialises socket writes; CmdSN is assigned under it so commands leave in
	// CmdSN order, as RFC 7143 §3.2.2.1 requires on a connection.
	wmu sync.Mutex

	snMu     sync.Mutex
	cmdSN    uint32
	expCmdSN uint32
	maxCmdSN uint32
	windowCh chan struct{} // closed and replaced whenever MaxCmdSN advances

	expStatSN atomic.Uint32 // written by the reader only

	tmu     sync.Mutex
	tasks   map[uint32]*task
	nextITT uint32

	slots chan struct{} // queue depth

	dead       chan struct{}
	failOnce   sync.Once
	err        error // why the session ended; set before dead is closed
	closing    atomic.Bool
	closeOnce  sync.Once
	closeErr   error
	readerDone chan struct{}
	helpers    sync.WaitGroup // NOP-In answers
}

// task is one initiator task (a SCSI command, or the logout) awaiting the target.
type task struct {
	itt  uint32
	in   []byte // Data-In lands here directly
	out  []byte // Data-Out is sent from here directly
	r2t  chan r2t
	done chan struct{}

	// Written by the reader goroutine before done is closed.
	completed bool
	response  byte
	status    byte
	sense     []byte
	residual  uint32
	underflow bool
	err       error
}

type r2t struct{ ttt, offset, length uint32 }

// Dial connects to portal ("host:port"), logs in to targetIQN and enters the full
// feature phase.
func Dial(ctx context.Context, portal, targetIQN string, opts Options) (*Session, error) {
	opts = opts.withDefaults()
	conn, w, err := connect(ctx, portal, opts)
	if err != nil {
		return nil, err
	}
	res, err := runLogin(ctx, conn, w, opts, targetIQN)
	if err != nil {
		conn.Close()
		return nil, err
	}
	// The session never needs the secret again; not keeping it means no dump of the
	// session can show it.
	opts.CHAPSecret = ""
	s := &Session{
		conn:       conn,
		br:         w.br,
		opts:       opts,
		target:     targetIQN,
		portal:     portal,
		params:     res.params,
		cmdSN:      res.cmdSN,
		expCmdSN:   res.expCmdSN,
		maxCmdSN:   res.maxCmdSN,
		windowCh:   make(chan struct{}),
		tasks:      make(map[uint32]*task),
		slots:      make(chan struct{}, opts.QueueDepth),
		dead:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	s.expStatSN.Store(res.expStatSN)
	go s.readLoop()
	return s, nil
}

func connect(ctx context.Context, portal string, opts Options) (net.Conn, *wire, error) {
	d := net.Dialer{Timeout: opts.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", portal)
	if err != nil {
		return nil, nil, fmt.Errorf("iscsi connect %s: %w", portal, err)
	}
	return conn, &wire{conn: conn, br: bufio.NewReaderSize(conn, 64<<10)}, nil
}

func runLogin(ctx context.Context, conn net.Conn, w *wire, opts Options, target string) (*loginResult, error) {
	spec := loginSpec{
		initiator:  opts.InitiatorName,
		target:     target,
		chapUser:   opts.CHAPUser,
		chapSecret: opts.CHAPSecret,
		maxRecv:    opts.MaxRecvDataSegmentLength,
	}
	// Random ISID qualifier (type 10b, RFC 7143 §11.12.5) so concurrent sessions from
	// this host to one target are distinct I_T nexuses.
	spec.isid[0] = 0x80
	if _, err := rand.Read(spec.isid[1:]); err != nil {
		return nil, err
	}
	release := bound(ctx, conn, opts.LoginTimeout)
	defer release()
	res, err := login(w, spec)
	if err != nil {
		var le *LoginError
		if errors.As(err, &le) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrAuthentication) {
			return nil, err
		}
		return nil, netError(ctx, "iscsi login to "+target, err)
	}
	return res, nil
}

// Target returns the IQN the session is logged in to.
func (s *Session) Target() string { return s.target }

// Params returns the operational parameters negotiated at login.
func (s *Session) Params() Params { return s.params }

// Err returns nil while the session is usable, else why it ended.
func (s *Session) Err() error {
	select {
	case <-s.dead:
		return s.err
	default:
		return nil
	}
}

// Close logs out (when the session is still alive), closes the connection and waits for
// the session's goroutines to end. It returns the logout error, if any.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		if s.Err() == nil {
			s.closeErr = s.logout()
		}
		s.fail(ErrSessionClosed)
		<-s.readerDone
		s.helpers.Wait()
	})
	return s.closeErr
}

// fail ends the session: every waiter sees dead and the connection is closed, which
// stops the reader and any blocked write.
func (s *Session) fail(err error) {
	s.failOnce.Do(func() {
		s.err = err
		close(s.dead)
		s.conn.Close()
	})
}

func (s *Session) logout() error {
	t := s.register(nil, nil)
	defer s.unregister(t)
	var h bhs
	h[0] = flagImmed | opLogoutReq
	h[1] = flagFinal // reason 0: close the session
	be.PutUint32(h[16:20], t.itt)
	s.wmu.Lock()
	s.snMu.Lock()
	be.PutUint32(h[24:28], s.cmdSN) // immediate: CmdSN is carried, not advanced
	s.snMu.Unlock()
	be.PutUint32(h[28:32], s.expStatSN.Load())
	err := s.writeLocked(net.Buffers{h[:]}, s.opts.LogoutTimeout)
	s.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("iscsi logout from %s: %w", s.target, err)
	}
	timer := time.NewTimer(s.opts.LogoutTimeout)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-s.dead:
		// The target closes the connection right after its Logout Response; the reader
		// completes the task before it sees the close, so done is set if it came.
		select {
		case <-t.done:
		default:
			return fmt.Errorf("iscsi logout from %s: %w", s.target, s.err)
		}
	case <-timer.C:
		return fmt.Errorf("iscsi logout from %s: %w after %s", s.target, ErrTimeout, s.opts.LogoutTimeout)
	}
	if t.response != 0 {
		return fmt.Errorf("iscsi logout from %s: target answered response %d", s.target, t.response)
	}
	return nil
}

// writeLocked writes bufs with a deadline; the caller holds wmu. A failed or partial
// write leaves the PDU stream unusable, so it ends the session.
func (s *Session) writeLocked(bufs net.Buffers, timeout time.Duration) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := bufs.WriteTo(s.conn); err != nil {
		var werr error
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			werr = fmt.Errorf("iscsi write to %s: %w: target stopped accepting data", s.portal, ErrTimeout)
		} else {
			werr = fmt.Errorf("iscsi write to %s: %w", s.portal, err)
		}
		s.fail(werr)
		return s.err
	}
	return nil
}

func (s *Session) register(in, out []byte) *task {
	t := &task{in: in, out: out, done: make(chan struct{})}
	if out != nil {
		t.r2t = make(chan r2t, 64)
	}
	s.tmu.Lock()
	for {
		s.nextITT++
		if s.nextITT == reservedTag {
			continue
		}
		if _, busy := s.tasks[s.nextITT]; !busy {
			break
		}
	}
	t.itt = s.nextITT
	s.tasks[t.itt] = t
	s.tmu.Unlock()
	return t
}

func (s *Session) unregister(t *task) {
	s.tmu.Lock()
	delete(s.tasks, t.itt)
	s.tmu.Unlock()
}

func (s *Session) lookup(itt uint32) *task {
	s.tmu.Lock()
	t := s.tasks[itt]
	s.tmu.Unlock()
	return t
}

// command is one SCSI command: in for Data-In, out for Data-Out (at most one of them).
type command struct {
	lun     uint64
	cdb     [16]byte
	in      []byte
	out     []byte
	timeout time.Duration
}

// do runs c, retrying the conditions that mean "not executed, try again" (UNIT ATTENTION
// after a reset or LUN change, BUSY, TASK SET FULL). It returns the Data-In byte count.
func (s *Session) do(ctx context.Context, c *command) (int, error) {
	const attempts = 6 // with the doubling backoff, about 0.6 s in all
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		n, err := s.execute(ctx, c)
		var se *SCSIError
		if err == nil || attempt == attempts || !errors.As(err, &se) || !se.retryable() {
			return n, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-s.dead:
			return 0, s.err
		}
		backoff *= 2
	}
}

func (s *Session) execute(ctx context.Context, c *command) (int, error) {
	op := opName(c.cdb[0])
	timeout := c.timeout
	if timeout <= 0 {
		timeout = s.opts.CommandTimeout
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-s.dead:
		return 0, s.err
	}
	defer func() { <-s.slots }()

	t := s.register(c.in, c.out)
	defer s.unregister(t)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if err := s.sendCommand(ctx, t, c, timer.C, timeout); err != nil {
		return 0, err
	}

	// From here the target owns the command and may still read c.out or fill c.in:
	// returning before it completes is only safe once the session is torn down and
	// the reader has stopped.
	stop := context.AfterFunc(ctx, func() {
		s.fail(fmt.Errorf("iscsi %s aborted: %w", op, context.Cause(ctx)))
	})
	defer stop()
	for {
		select {
		case r := <-t.r2t:
			if err := s.sendData(t, r, timeout); err != nil {
				<-s.readerDone
				return 0, err
			}
			continue
		case <-t.done:
		case <-s.dead:
			<-s.readerDone
			if !t.completed {
				return 0, s.err
			}
		case <-timer.C:
			s.fail(fmt.Errorf("iscsi %s on %s: %w: no status within %s", op, s.target, ErrTimeout, timeout))
			<-s.readerDone
			return 0, s.err
		}
		break
	}
	return t.result(op, len(c.in), len(c.out))
}

func (t *task) result(op string, inLen, outLen int) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.response != 0 || t.status != statusGood {
		return 0, &SCSIError{Op: op, Response: t.response, Status: t.status, Sense: parseSense(t.sense)}
	}
	if t.underflow && outLen > 0 {
		return 0, fmt.Errorf("scsi %s: target took %d of %d bytes", op, outLen-int(t.residual), outLen)
	}
	n := inLen
	if t.underflow {
		n -= int(t.residual)
	}
	return max(n, 0), nil
}

// sendCommand waits for room in the command window, then sends the SCSI Command PDU with
// its immediate data and any unsolicited Data-Out in one vectored write.
func (s *Session) sendCommand(ctx context.Context, t *task, c *command, expired <-chan time.Time, timeout time.Duration) error {
	var h bhs
	h[0] = opSCSICmd
	attrs := byte(1) // SIMPLE task attribute
	length := 0
	if c.in != nil {
		attrs |= 0x40
		length = len(c.in)
	}
	if c.out != nil {
		attrs |= 0x20
		length = len(c.out)
	}
	immediate, unsolicited := s.unsolicited(len(c.out))
	if unsolicited == immediate {
		attrs |= flagFinal
	}
	h[1] = attrs
	h.setDataLen(immediate)
	lun := encodeLUN(c.lun)
	copy(h[8:16], lun[:])
	be.PutUint32(h[16:20], t.itt)
	be.PutUint32(h[20:24], uint32(length))
	copy(h[32:48], c.cdb[:])
	bufs := net.Buffers{h[:]}
	if immediate > 0 {
		bufs = append(bufs, c.out[:immediate], zeroPad[:padLen(immediate)])
	}
	if unsolicited > immediate {
		bufs = s.appendDataOut(bufs, t, reservedTag, uint32(immediate), uint32(unsolicited-immediate))
	}
	for {
		s.wmu.Lock()
		s.snMu.Lock()
		open := !snLess(s.maxCmdSN, s.cmdSN)
		wait := s.windowCh
		if open {
			be.PutUint32(h[24:28], s.cmdSN)
			s.cmdSN++
		}
		s.snMu.Unlock()
		if open {
			be.PutUint32(h[28:32], s.expStatSN.Load())
			err := s.writeLocked(bufs, timeout)
			s.wmu.Unlock()
			if err != nil {
				<-s.readerDone
			}
			return err
		}
		s.wmu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-s.dead:
			return s.err
		case <-expired:
			return fmt.Errorf("iscsi %s on %s: %w: command window stayed closed for %s",
				opName(c.cdb[0]), s.target, ErrTimeout, timeout)
		}
	}
}

// unsolicited returns how many bytes of an n-byte write travel as immediate data, and
// how many in total go before the first R2T (immediate plus unsolicited Data-Out).
func (s *Session) unsolicited(n int) (immediate, total int) {
	p := &s.params
	if n == 0 {
		return 0, 0
	}
	if p.ImmediateData {
		immediate = min(n, p.FirstBurstLength, p.MaxXmitDataSegmentLength)
	}
	total = immediate
	if !p.InitialR2T {
		total = min(n, p.FirstBurstLength)
	}
	return immediate, total
}

// appendDataOut appends the Data-Out PDUs carrying t.out[offset:offset+length] as one
// sequence (DataSN from 0, F on the last PDU), pointing at the caller's data.
func (s *Session) appendDataOut(bufs net.Buffers, t *task, ttt, offset, length uint32) net.Buffers {
	seg := uint32(s.params.MaxXmitDataSegmentLength)
	count := (length + seg - 1) / seg
	headers := make([]byte, int(count)*bhsLen)
	expStatSN := s.expStatSN.Load()
	for i := range count {
		h := (*bhs)(headers[i*bhsLen : (i+1)*bhsLen])
		off := offset + i*seg
		n := min(seg, offset+length-off)
		h[0] = opDataOut
		if i == count-1 {
			h[1] = flagFinal
		}
		h.setDataLen(int(n))
		be.PutUint32(h[16:20], t.itt)
		be.PutUint32(h[20:24], ttt)
		be.PutUint32(h[28:32], expStatSN)
		be.PutUint32(h[36:40], i)
		be.PutUint32(h[40:44], off)
		bufs = append(bufs, h[:], t.out[off:off+n])
		if p := padLen(int(n)); p > 0 {
			bufs = append(bufs, zeroPad[:p])
		}
	}
	return bufs
}

func (s *Session) sendData(t *task, r r2t, timeout time.Duration) error {
	if r.length == 0 || uint64(r.offset)+uint64(r.length) > uint64(len(t.out)) {
		err := fmt.Errorf("%w: R2T for bytes %d+%d of a %d-byte write", ErrProtocol, r.offset, r.length, len(t.out))
		s.fail(err)
		return err
	}
	bufs := s.appendDataOut(nil, t, r.ttt, r.offset, r.length)
	s.wmu.Lock()
	err := s.writeLocked(bufs, timeout)
	s.wmu.Unlock()
	return err
}

// readLoop is the only reader of the connection: it demultiplexes target PDUs to the
// tasks by Initiator Task Tag.
func (s *Session) readLoop() {
	defer close(s.readerDone)
	for {
		var h bhs
		err := readHeader(s.br, &h)
		if err == nil {
			err = s.dispatch(&h)
		}
		if err != nil {
			if s.closing.Load() {
				s.fail(ErrSessionClosed)
			} else if errors.Is(err, ErrProtocol) {
				s.fail(err)
			} else if errors.Is(err, io.EOF) {
				s.fail(fmt.Errorf("iscsi connection to %s (%s) closed by the target", s.portal, s.target))
			} else {
				s.fail(fmt.Errorf("iscsi connection to %s (%s) lost: %w", s.portal, s.target, err))
			}
			return
		}
	}
}

func (s *Session) dispatch(h *bhs) error {
	if h.opcode() == opDataIn {
		return s.onDataIn(h)
	}
	data, err := readData(s.br, h.dataLen(), max(s.params.MaxRecvDataSegmentLength, 8192))
	if err != nil {
		return err
	}
	s.updateWindow(h)
	switch h.opcode() {
	case opSCSIResp:
		s.advanceStatSN(h)
		t := s.lookup(h.itt())
		if t == nil || t.completed {
			return fmt.Errorf("%w: SCSI Response for unknown task 0x%08x", ErrProtocol, h.itt())
		}
		t.response, t.status = h[2], h[3]
		t.underflow = h.flags()&dataInUnder != 0
		t.residual = be.Uint32(h[44:48])
		if len(data) >= 2 {
			n := int(be.Uint16(data[:2]))
			t.sense = data[2:min(2+n, len(data))]
		}
		s.complete(t)
	case opR2T:
		t := s.lookup(h.itt())
		if t == nil || t.out == nil || t.completed {
			return fmt.Errorf("%w: R2T for unknown or read task 0x%08x", ErrProtocol, h.itt())
		}
		select {
		case t.r2t <- r2t{ttt: h.ttt(), offset: be.Uint32(h[40:44]), length: be.Uint32(h[44:48])}:
		default:
			return fmt.Errorf("%w: more outstanding R2Ts than negotiated", ErrProtocol)
		}
	case opNOPIn:
		if h.itt() != reservedTag {
			s.advanceStatSN(h)
		}
		if h.ttt() != reservedTag {
			s.answerPing(h, data)
		}
	case opLogoutResp:
		s.advanceStatSN(h)
		if t := s.lookup(h.itt()); t != nil && !t.completed {
			t.response = h[2]
			s.complete(t)
		}
	case opAsync:
		s.advanceStatSN(h)
		switch h[36] {
		case 1:
			return fmt.Errorf("iscsi target %s requested logout", s.target)
		case 2, 3:
			return fmt.Errorf("iscsi target %s announced it drops the connection", s.target)
		}
	case opReject:
		s.advanceStatSN(h)
		if len(data) >= bhsLen {
			rejected := (*bhs)(data[:bhsLen])
			if t := s.lookup(rejected.itt()); t != nil && !t.completed && rejected.itt() != reservedTag {
				t.err = fmt.Errorf("iscsi target %s rejected a PDU (reason 0x%02x)", s.target, h[2])
				s.complete(t)
				return nil
			}
		}
		return fmt.Errorf("%w: target rejected a PDU (reason 0x%02x)", ErrProtocol, h[2])
	case opTMFResp, opTextResp:
		s.advanceStatSN(h)
	default:
		return fmt.Errorf("%w: unexpected opcode 0x%02x", ErrProtocol, h.opcode())
	}
	return nil
}

// onDataIn reads the data segment straight into the task's buffer at the PDU's offset.
func (s *Session) onDataIn(h *bhs) error {
	t := s.lookup(h.itt())
	n := h.dataLen()
	off := int(be.Uint32(h[40:44]))
	if t == nil || t.completed || off+n > len(t.in) {
		return fmt.Errorf("%w: Data-In for unknown task 0x%08x or beyond its buffer", ErrProtocol, h.itt())
	}
	if _, err := io.ReadFull(s.br, t.in[off:off+n]); err != nil {
		return err
	}
	if p := padLen(n); p > 0 {
		if _, err := s.br.Discard(p); err != nil {
			return err
		}
	}
	s.updateWindow(h)
	if h.flags()&dataInStatus != 0 {
		s.advanceStatSN(h)
		t.status = h[3]
		t.underflow = h.flags()&dataInUnder != 0
		t.residual = be.Uint32(h[44:48])
		s.complete(t)
	}
	return nil
}

func (s *Session) complete(t *task) {
	t.completed = true
	close(t.done)
}

func (s *Session) advanceStatSN(h *bhs) {
	if next := h.statSN() + 1; snLess(s.expStatSN.Load(), next) {
		s.expStatSN.Store(next)
	}
}

// updateWindow applies ExpCmdSN/MaxCmdSN as RFC 7143 §4.2.2.1 says: ignored when
// MaxCmdSN < ExpCmdSN-1, otherwise only ever moved forward.
func (s *Session) updateWindow(h *bhs) {
	exp, maxSN := h.expCmdSN(), h.maxCmdSN()
	if snLess(maxSN, exp-1) {
		return
	}
	s.snMu.Lock()
	if snLess(s.expCmdSN, exp) {
		s.expCmdSN = exp
	}
	if snLess(s.maxCmdSN, maxSN) {
		s.maxCmdSN = maxSN
		close(s.windowCh)
		s.windowCh = make(chan struct{})
	}
	s.snMu.Unlock()
}

// answerPing replies to a target NOP-In that asks for one. The reply is written from
// its own goroutine so the reader never waits behind a long Data-Out write.
func (s *Session) answerPing(in *bhs, data []byte) {
	var h bhs
	h[0] = flagImmed | opNOPOut
	h[1] = flagFinal
	copy(h[8:16], in[8:16])
	be.PutUint32(h[16:20], reservedTag)
	be.PutUint32(h[20:24], in.ttt())
	h.setDataLen(len(data))
	s.helpers.Add(1)
	go func() {
		defer s.helpers.Done()
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if s.Err() != nil {
			return
		}
		s.snMu.Lock()
		be.PutUint32(h[24:28], s.cmdSN)
		s.snMu.Unlock()
		be.PutUint32(h[28:32], s.expStatSN.Load())
		_ = s.writeLocked(net.Buffers{h[:], data, zeroPad[:padLen(len(data))]}, s.opts.CommandTimeout)
	}()
}

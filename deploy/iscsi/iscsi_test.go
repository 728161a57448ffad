package iscsi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/agent/tgt/tgttest"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

// newDisk creates a sparse backing file of size bytes.
func newDisk(dir, name string, size int64) string {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Truncate(size)).To(Succeed())
	Expect(f.Close()).To(Succeed())
	return path
}

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	_, _ = r.Read(b)
	return b
}

// firstDiff returns the first offset where a and b differ, or -1; it keeps failure
// messages short where comparing megabytes with Equal would print them all.
func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func fileContent(path string) []byte {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func iscsiURL(t *tgttest.Target, iqn string, lun int) string {
	return fmt.Sprintf("iscsi://%s/%s/%d", t.Portal, iqn, lun)
}

var _ = Describe("iSCSI initiator against a real tgtd", func() {
	var (
		target *tgttest.Target
		dir    string
		ctx    context.Context
	)

	BeforeEach(func() {
		// Registered first, so it runs last: after every session of the spec is closed
		// and tgtd is gone, no goroutine of the package may remain.
		DeferCleanup(func() {
			Eventually(packageGoroutines).WithTimeout(5 * time.Second).Should(BeZero())
		})
		dir = GinkgoT().TempDir()
		var err error
		target, err = tgttest.Start(context.Background(), dir, tgt.Options{Stock: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(target.Stop()).To(Succeed()) })
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
		DeferCleanup(cancel)
	})

	dial := func(iqn string, opts iscsi.Options) *iscsi.Session {
		s, err := iscsi.Dial(ctx, target.Portal, iqn, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = s.Close() })
		return s
	}

	It("discovers every target with its portal through SendTargets", func() {
		_, err := target.AddTarget("iqn.2026-12.test:alpha", newDisk(dir, "a.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())
		_, err = target.AddTarget("iqn.2026-12.test:beta", newDisk(dir, "b.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())

		found, err := iscsi.Discover(ctx, target.Portal, iscsi.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(ConsistOf(
			iscsi.Target{IQN: "iqn.2026-12.test:alpha", Portals: []string{target.Portal}},
			iscsi.Target{IQN: "iqn.2026-12.test:beta", Portals: []string{target.Portal}},
		))
	})

	It("logs in, negotiates, and logs out so the target drops the I_T nexus", func() {
		tid, err := target.AddTarget("iqn.2026-12.test:login", newDisk(dir, "l.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())
		s, err := iscsi.Dial(ctx, target.Portal, "iqn.2026-12.test:login",
			iscsi.Options{InitiatorName: "iqn.2026-12.test:initiator-login"})
		Expect(err).NotTo(HaveOccurred())
		p := s.Params()
		Expect(p.MaxBurstLength).To(BeNumerically(">=", 512))
		Expect(p.FirstBurstLength).To(BeNumerically("<=", p.MaxBurstLength))
		Expect(p.MaxXmitDataSegmentLength).To(BeNumerically(">=", 512))
		Expect(target.Connections(tid)).To(ContainSubstring("iqn.2026-12.test:initiator-login"))

		Expect(s.Close()).To(Succeed())
		Eventually(func() (string, error) { return target.Connections(tid) }).WithTimeout(10 * time.Second).
			ShouldNot(ContainSubstring("iqn.2026-12.test:initiator-login"))
		_, err = s.ReportLUNs(ctx)
		Expect(err).To(MatchError(iscsi.ErrSessionClosed))
	})

	It("refuses a login to an unknown target with ErrTargetNotFound", func() {
		_, err := target.AddTarget("iqn.2026-12.test:somebody", newDisk(dir, "s.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())
		_, err = iscsi.Dial(ctx, target.Portal, "iqn.2026-12.test:nobody", iscsi.Options{})
		Expect(err).To(MatchError(iscsi.ErrTargetNotFound))
	})

	It("reads the serial number and world wide names the target reports for a LUN", func() {
		tid, err := target.AddTarget("iqn.2026-12.test:ident", newDisk(dir, "i.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())
		Expect(target.Adm("--mode", "logicalunit", "--op", "update", "--tid", strconv.Itoa(tid), "--lun", "1",
			"--params", "scsi_sn=WD-WCC4N0ABCDEF")).To(Succeed())
		s := dial("iqn.2026-12.test:ident", iscsi.Options{})
		lun, err := s.OpenLUN(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		id, err := lun.Identity(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.Serial).To(Equal("WD-WCC4N0ABCDEF"), "without tgtd's space padding")
		Expect(id.WWNs).NotTo(BeEmpty())
		for _, w := range id.WWNs {
			Expect(w).To(MatchRegexp(`^0x[0-9a-f]{16}([0-9a-f]{16})?$`))
		}
	})

	It("lists LUNs, identifies the disk and reads the capacity of the backing file", func() {
		const size = 40<<20 + 3*512
		_, err := target.AddTarget("iqn.2026-12.test:cap", newDisk(dir, "c.img", size))
		Expect(err).NotTo(HaveOccurred())
		s := dial("iqn.2026-12.test:cap", iscsi.Options{})

		Expect(s.ReportLUNs(ctx)).To(Equal([]uint64{0, 1}))
		inq, err := s.Inquiry(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(inq.PeripheralDeviceType).To(BeZero())
		Expect(inq.Vendor).To(Equal("IET"))
		Expect(s.FirstDisk(ctx)).To(Equal(uint64(1)))

		lun, err := s.OpenLUN(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(lun.Size()).To(Equal(int64(size)))
		Expect(lun.BlockSize()).To(Equal(512))

		out, err := exec.Command("iscsi-readcapacity16", "-s", iscsiURL(target, "iqn.2026-12.test:cap", 1)).Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(string(out))).To(Equal(fmt.Sprint(lun.Size())))
	})

	Describe("reading and writing a LUN", func() {
		const size = 24 << 20
		var (
			backing string
			tid     int
			lun     *iscsi.LUN
			iqn     = "iqn.2026-12.test:rw"
		)

		openLUN := func() {
			s := dial(iqn, iscsi.Options{QueueDepth: 8, MaxTransferLength: 512 << 10})
			var err error
			lun, err = s.OpenLUN(ctx, 1)
			Expect(err).NotTo(HaveOccurred())
		}

		BeforeEach(func() {
			backing = newDisk(dir, "rw.img", size)
			var err error
			tid, err = target.AddTarget(iqn, backing)
			Expect(err).NotTo(HaveOccurred())
		})

		DescribeTable("writes at aligned and unaligned offsets; the backing file, Read and libiscsi all agree",
			func(targetParams map[string]string) {
				for name, value := range targetParams {
					Expect(target.Adm("--mode", "target", "--op", "update", "--tid", fmt.Sprint(tid),
						"--name", name, "--value", value)).To(Succeed())
				}
				openLUN()
				model := make([]byte, size)
				dev := lun.Device(ctx)
				writes := []struct{ off, n int }{
					{0, 512},                        // one aligned block
					{3*512 + 17, 100},               // inside one block
					{4096 - 10, 20},                 // across a block boundary
					{1<<20 + 123, 3 << 20},          // unaligned both ends, many bursts and commands
					{8 << 20, 512 << 10},            // exactly one command
					{9<<20 + 512, 2<<20 + 5*512},    // aligned, odd number of blocks
					{10<<20 + 511, 1},               // a single byte
					{size - 700, 700},               // up to the last byte
					{12 << 20, 64<<10 + 8192 + 512}, // immediate data plus solicited data
				}
				for i, w := range writes {
					data := randomBytes(uint64(i+1), w.n)
					n, err := dev.WriteAt(data, int64(w.off))
					Expect(err).NotTo(HaveOccurred(), "write %d", i)
					Expect(n).To(Equal(w.n))
					copy(model[w.off:], data)
				}
				Expect(dev.Sync()).To(Succeed())

				Expect(firstDiff(fileContent(backing), model)).To(Equal(-1), "backing file differs")

				back := make([]byte, size)
				Expect(lun.Read(ctx, 0, back)).To(Succeed())
				Expect(firstDiff(back, model)).To(Equal(-1), "iSCSI read differs")
				for i, w := range writes {
					part := make([]byte, w.n)
					n, err := dev.ReadAt(part, int64(w.off))
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(w.n))
					Expect(firstDiff(part, model[w.off:w.off+w.n])).To(Equal(-1), "ReadAt %d", i)
				}

				copyOut := filepath.Join(dir, "via-qemu.raw")
				out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "raw",
					iscsiURL(target, iqn, 1), copyOut).CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), string(out))
				Expect(firstDiff(fileContent(copyOut), model)).To(Equal(-1), "qemu-img (libiscsi) sees other data")

				out, err = exec.Command("iscsi-inq", iscsiURL(target, iqn, 1)).CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), string(out))
				Expect(string(out)).To(ContainSubstring("DIRECT_ACCESS"))
			},
			Entry("with tgtd's defaults (InitialR2T=Yes, 8 KiB segments)", map[string]string(nil)),
			Entry("with unsolicited data, 64 KiB segments and 1 MiB bursts", map[string]string{
				"InitialR2T": "No", "MaxRecvDataSegmentLength": "65536",
				"FirstBurstLength": "131072", "MaxBurstLength": "1048576",
			}),
		)

		It("keeps disjoint concurrent WriteAt calls that share blocks intact", func() {
			openLUN()
			model := make([]byte, 8192)
			dev := lun.Device(ctx)
			var wg sync.WaitGroup
			for i := range 64 {
				data := randomBytes(uint64(100+i), 128)
				copy(model[i*128:], data)
				wg.Go(func() {
					defer GinkgoRecover()
					_, err := dev.WriteAt(data, int64(i*128))
					Expect(err).NotTo(HaveOccurred())
				})
			}
			wg.Wait()
			Expect(firstDiff(fileContent(backing)[:8192], model)).To(Equal(-1))
		})

		It("copies a stream with a partial last block, leaving the rest of that block", func() {
			openLUN()
			tailKeep := randomBytes(7, 512)
			_, err := lun.Device(ctx).WriteAt(tailKeep, 5<<20)
			Expect(err).NotTo(HaveOccurred())
			src := randomBytes(8, 5<<20+300)
			n, err := lun.CopyFrom(ctx, 0, bytes.NewReader(src))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(int64(len(src))))
			got := fileContent(backing)
			Expect(firstDiff(got[:len(src)], src)).To(Equal(-1))
			Expect(firstDiff(got[len(src):5<<20+512], tailKeep[300:])).To(Equal(-1))
		})

		It("rejects I/O outside the LUN or not in whole blocks", func() {
			openLUN()
			Expect(lun.Write(ctx, lun.Blocks()-1, make([]byte, 1024))).To(MatchError(iscsi.ErrOutOfRange))
			Expect(lun.Read(ctx, 0, make([]byte, 100))).To(HaveOccurred())
			_, err := lun.Device(ctx).WriteAt(make([]byte, 10), size-5)
			Expect(err).To(MatchError(iscsi.ErrOutOfRange))
			n, err := lun.Device(ctx).ReadAt(make([]byte, 1000), size-400)
			Expect(n).To(Equal(400))
			Expect(err).To(Equal(io.EOF))
			_, err = lun.CopyFrom(ctx, size-512, bytes.NewReader(make([]byte, 1024)))
			Expect(err).To(MatchError(iscsi.ErrOutOfRange))
		})
	})

	Describe("CHAP", func() {
		const (
			iqn    = "iqn.2026-12.test:chap"
			user   = "deployer"
			secret = "s3cret-Passw0rd-xyz"
		)
		BeforeEach(func() {
			tid, err := target.AddTarget(iqn, newDisk(dir, "chap.img", 1<<20))
			Expect(err).NotTo(HaveOccurred())
			Expect(target.RequireCHAP(tid, user, secret)).To(Succeed())
		})

		It("logs in with the right secret", func() {
			s := dial(iqn, iscsi.Options{CHAPUser: user, CHAPSecret: secret})
			lun, err := s.OpenLUN(ctx, 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(lun.Size()).To(Equal(int64(1 << 20)))
		})

		It("fails with ErrAuthentication for a wrong secret or none, never revealing the secret", func() {
			wrong := "wrong-Secret-123"
			_, err := iscsi.Dial(ctx, target.Portal, iqn, iscsi.Options{CHAPUser: user, CHAPSecret: wrong})
			Expect(err).To(MatchError(iscsi.ErrAuthentication))
			Expect(err.Error()).NotTo(ContainSubstring(wrong))

			_, err = iscsi.Dial(ctx, target.Portal, iqn, iscsi.Options{})
			Expect(err).To(MatchError(iscsi.ErrAuthentication))

			opts := iscsi.Options{CHAPUser: user, CHAPSecret: secret}
			Expect(fmt.Sprintf("%v %+v %#v %s", opts, opts, opts, opts)).NotTo(ContainSubstring(secret))
		})
	})

	It("answers the target's NOP-In pings, so an idle session survives", func() {
		const iqn = "iqn.2026-12.test:nop"
		tid, err := target.AddTarget(iqn, newDisk(dir, "nop.img", 1<<20))
		Expect(err).NotTo(HaveOccurred())
		// tgtd pings every second and drops the connection after 2 unanswered pings.
		Expect(target.Adm("--mode", "target", "--op", "update", "--tid", fmt.Sprint(tid),
			"--name", "nop_interval", "--value", "1")).To(Succeed())
		Expect(target.Adm("--mode", "target", "--op", "update", "--tid", fmt.Sprint(tid),
			"--name", "nop_count", "--value", "2")).To(Succeed())
		s := dial(iqn, iscsi.Options{})
		time.Sleep(4 * time.Second)
		Expect(s.Err()).NotTo(HaveOccurred())
		Expect(s.ReportLUNs(ctx)).To(HaveLen(2))
	})

	Describe("a target that goes away mid-write", func() {
		const iqn = "iqn.2026-12.test:gone"
		var (
			tid int
			lun *iscsi.LUN
			s   *iscsi.Session
		)
		BeforeEach(func() {
			var err error
			tid, err = target.AddTarget(iqn, newDisk(dir, "gone.img", 1<<30))
			Expect(err).NotTo(HaveOccurred())
			s = dial(iqn, iscsi.Options{CommandTimeout: 5 * time.Second})
			lun, err = s.OpenLUN(ctx, 1)
			Expect(err).NotTo(HaveOccurred())
		})

		// writeUntilFailure streams an endless source into the LUN; the returned channel
		// yields CopyFrom's error.
		writeUntilFailure := func() <-chan error {
			src := &countingReader{}
			errc := make(chan error, 1)
			go func() {
				_, err := lun.CopyFrom(ctx, 0, src)
				errc <- err
			}()
			Eventually(src.count).WithTimeout(time.Minute).Should(BeNumerically(">", 8<<20))
			return errc
		}

		It("fails promptly when the target is deleted", func() {
			errc := writeUntilFailure()
			Expect(target.DeleteTarget(tid)).To(Succeed())
			var err error
			Eventually(errc).WithTimeout(10 * time.Second).Should(Receive(&err))
			GinkgoWriter.Printf("write error: %v\n", err)
			Expect(err).To(HaveOccurred())
			Expect(s.Err()).To(HaveOccurred())
			Expect(s.Close()).To(Succeed())
		})

		It("fails promptly when tgtd is killed", func() {
			errc := writeUntilFailure()
			target.Kill()
			var err error
			Eventually(errc).WithTimeout(10 * time.Second).Should(Receive(&err))
			GinkgoWriter.Printf("write error: %v\n", err)
			Expect(err).To(MatchError(ContainSubstring(target.Portal)))
			Expect(s.Close()).To(Succeed())
		})

		It("fails within the command timeout when the target goes silent", func() {
			errc := writeUntilFailure()
			resume := target.Freeze()
			DeferCleanup(resume)
			var err error
			Eventually(errc).WithTimeout(15 * time.Second).Should(Receive(&err))
			GinkgoWriter.Printf("write error: %v\n", err)
			Expect(err).To(MatchError(iscsi.ErrTimeout))
			Expect(s.Close()).To(Succeed())
		})

		It("stops promptly when the context is cancelled, leaving no command behind", func() {
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			src := &countingReader{}
			go func() {
				_, err := lun.CopyFrom(cctx, 0, src)
				errc <- err
			}()
			Eventually(src.count).WithTimeout(time.Minute).Should(BeNumerically(">", 8<<20))
			cancel()
			var err error
			Eventually(errc).WithTimeout(5 * time.Second).Should(Receive(&err))
			Expect(err).To(MatchError(context.Canceled))
			// A command in flight at the cancellation ends the session (error recovery
			// level 0 has no abort); cancelling between commands leaves it usable.
			if s.Err() != nil {
				Expect(s.Err()).To(MatchError(context.Canceled))
			} else {
				Expect(s.ReportLUNs(ctx)).To(HaveLen(2))
			}
		})
	})

	It("runs many sessions to different LUNs concurrently", func() {
		const (
			targets    = 4
			lunsPerTgt = 3
			size       = 4 << 20
		)
		type disk struct {
			iqn  string
			lun  uint64
			path string
		}
		var disks []disk
		for t := range targets {
			iqn := fmt.Sprintf("iqn.2026-12.test:many-%d", t)
			var files []string
			for l := range lunsPerTgt {
				p := newDisk(dir, fmt.Sprintf("m%d-%d.img", t, l), size)
				files = append(files, p)
				disks = append(disks, disk{iqn, uint64(l + 1), p})
			}
			_, err := target.AddTarget(iqn, files...)
			Expect(err).NotTo(HaveOccurred())
		}
		var wg sync.WaitGroup
		for i, d := range disks {
			wg.Go(func() {
				defer GinkgoRecover()
				s, err := iscsi.Dial(ctx, target.Portal, d.iqn, iscsi.Options{QueueDepth: 4})
				Expect(err).NotTo(HaveOccurred())
				defer func() { Expect(s.Close()).To(Succeed()) }()
				lun, err := s.OpenLUN(ctx, d.lun)
				Expect(err).NotTo(HaveOccurred())
				Expect(lun.Write(ctx, 0, randomBytes(uint64(1000+i), size))).To(Succeed())
				Expect(lun.Sync(ctx)).To(Succeed())
			})
		}
		wg.Wait()
		for i, d := range disks {
			Expect(firstDiff(fileContent(d.path), randomBytes(uint64(1000+i), size))).To(Equal(-1), d.path)
		}
	})
})

// countingReader is an endless pseudo-random source that counts what it handed out.
type countingReader struct {
	mu sync.Mutex
	n  int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	r.mu.Lock()
	r.n += int64(len(p))
	r.mu.Unlock()
	return len(p), nil
}

func (r *countingReader) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

package tgt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent/tgt"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

func newFile(dir string, size int64) string {
	p := filepath.Join(dir, fmt.Sprintf("disk-%d.img", time.Now().UnixNano()))
	Expect(os.WriteFile(p, nil, 0o600)).To(Succeed())
	Expect(os.Truncate(p, size)).To(Succeed())
	return p
}

func alive(pid int) bool {
	// A zombie still accepts signal 0; tgtd's Wait reaps it, so this suffices.
	return syscall.Kill(pid, 0) == nil
}

var _ = Describe("Daemon", func() {
	var (
		ctx  context.Context
		dir  string
		opts tgt.Options
	)

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		DeferCleanup(cancel)
		dir = GinkgoT().TempDir()
		opts = tgt.Options{ControlPort: controlPort(), Portal: fmt.Sprintf("127.0.0.1:%d", freePort()),
			LogPath: filepath.Join(dir, "tgtd.log")}
	})

	It("exports a file as LUN 1 that an initiator writes through, idempotently, and stops cleanly", func() {
		d, err := tgt.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = d.Stop(context.Background()) })
		Expect(d.Owned()).To(BeTrue())
		disk := newFile(dir, 8<<20)
		const iqn = "iqn.2008-10.org.openstack:tgt-test"
		Expect(d.Export(ctx, iqn, disk)).To(Succeed())
		Expect(d.Export(ctx, iqn, disk)).To(Succeed())
		Expect(d.Export(ctx, iqn, newFile(dir, 1<<20))).To(MatchError(ContainSubstring("already exports")))
		targets, err := d.Targets(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(targets).To(HaveLen(1))
		Expect(targets[0].IQN).To(Equal(iqn))
		Expect(targets[0].LUNs).To(Equal(map[int]string{1: disk}))

		s, err := iscsi.Dial(ctx, d.Portal(), iqn, iscsi.Options{})
		Expect(err).NotTo(HaveOccurred())
		lun, err := s.OpenLUN(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(lun.Size()).To(Equal(int64(8 << 20)))
		payload := []byte("written through the exported LUN")
		_, err = lun.Device(ctx).WriteAt(payload, 3<<20+5)
		Expect(err).NotTo(HaveOccurred())
		Expect(lun.Sync(ctx)).To(Succeed())
		Expect(s.Close()).To(Succeed())
		got := make([]byte, len(payload))
		f, err := os.Open(disk)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.ReadAt(got, 3<<20+5)
		f.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(payload))

		pid := d.PID()
		Expect(d.Stop(ctx)).To(Succeed())
		Eventually(d.Exited()).Should(BeClosed())
		Expect(alive(pid)).To(BeFalse())
		Expect(filepath.Join("/var/run/tgtd", fmt.Sprintf("socket.%d", opts.ControlPort))).NotTo(BeAnExistingFile())
	})

	It("exports with CHAP: only the account's initiator logs in, the secret stays out of errors, the account goes with the target", func() {
		d, err := tgt.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = d.Stop(context.Background()) })
		const iqn = "iqn.2008-10.org.openstack:chap"
		chap := tgt.CHAP{User: "deploy-1234", Secret: "Zq8tW2mX9pL4vR7kY3nB6cJ1"}
		disk := newFile(dir, 1<<20)
		Expect(d.ExportCHAP(ctx, iqn, disk, chap, "SN-TGT-0001")).To(Succeed())
		Expect(d.ExportCHAP(ctx, iqn, disk, chap, "SN-TGT-0001")).To(Succeed())

		By("refusing an initiator without CHAP, and one with a wrong secret")
		_, err = iscsi.Dial(ctx, d.Portal(), iqn, iscsi.Options{})
		Expect(err).To(HaveOccurred())
		_, err = iscsi.Dial(ctx, d.Portal(), iqn, iscsi.Options{CHAPUser: chap.User, CHAPSecret: "wrong-secret-but-long"})
		Expect(err).To(HaveOccurred())

		By("admitting Ferric's initiator with the account")
		s, err := iscsi.Dial(ctx, d.Portal(), iqn, iscsi.Options{CHAPUser: chap.User, CHAPSecret: chap.Secret})
		Expect(err).NotTo(HaveOccurred())
		lun, err := s.OpenLUN(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		id, err := lun.Identity(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.Serial).To(Equal("SN-TGT-0001"), "the LUN reports the serial it was given")
		Expect(s.Close()).To(Succeed())

		By("keeping the secret out of a failed tgtadm call's error")
		err = d.ExportCHAP(ctx, "iqn.2008-10.org.openstack:chap-2", newFile(dir, 1<<20), chap, "")
		Expect(err).To(MatchError(ContainSubstring("account")))
		Expect(err.Error()).NotTo(ContainSubstring(chap.Secret))

		By("deleting the account with its target, so that it can be created again")
		Expect(d.Unexport(ctx, iqn)).To(Succeed())
		Expect(d.ExportCHAP(ctx, iqn, disk, chap, "")).To(Succeed())
	})

	// loggedIn starts a tgtd with opts, exports a 1 MiB file as iqn and logs
	// in to it; both are stopped when the spec ends.
	loggedIn := func(opts tgt.Options, iqn string) (*tgt.Daemon, *iscsi.Session) {
		d, err := tgt.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = d.Stop(context.Background()) })
		Expect(d.Export(ctx, iqn, newFile(dir, 1<<20))).To(Succeed())
		s, err := iscsi.Dial(ctx, d.Portal(), iqn, iscsi.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = s.Close() })
		return d, s
	}

	It("tunes its targets for bulk writes unless asked for tgtd's stock settings", func() {
		negotiated := func(opts tgt.Options) iscsi.Params {
			d, s := loggedIn(opts, "iqn.2008-10.org.openstack:tuning")
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", d.PID()))
			Expect(err).NotTo(HaveOccurred())
			if opts.Stock {
				Expect(string(environ)).NotTo(ContainSubstring("MALLOC_MMAP_THRESHOLD_"))
			} else {
				Expect(string(environ)).To(ContainSubstring("MALLOC_MMAP_THRESHOLD_=33554432"))
			}
			return s.Params()
		}
		tuned := negotiated(opts)
		Expect(tuned.MaxXmitDataSegmentLength).To(Equal(256 << 10))
		Expect(tuned.FirstBurstLength).To(Equal(1 << 20))
		Expect(tuned.MaxBurstLength).To(Equal(1 << 20))
		Expect(tuned.InitialR2T).To(BeFalse())

		stock := opts
		stock.Stock = true
		stock.ControlPort, stock.Portal = controlPort(), fmt.Sprintf("127.0.0.1:%d", freePort())
		plain := negotiated(stock)
		Expect(plain.MaxXmitDataSegmentLength).To(Equal(8 << 10))
		Expect(plain.InitialR2T).To(BeTrue())
	})

	It("removes a target with an initiator still logged in", func() {
		const iqn = "iqn.2008-10.org.openstack:busy"
		d, _ := loggedIn(opts, iqn)
		Expect(d.Unexport(ctx, iqn)).To(Succeed())
		Expect(d.Targets(ctx)).To(BeEmpty())
	})

	It("reuses a tgtd already running on the control port, adds its portal, and leaves it running", func() {
		owner, err := tgt.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(owner.Stop(context.Background())).To(Succeed()) })

		second := opts
		second.Portal = fmt.Sprintf("127.0.0.1:%d", freePort())
		d, err := tgt.Start(ctx, second)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Owned()).To(BeFalse())
		const iqn = "iqn.2008-10.org.openstack:reused"
		Expect(d.Export(ctx, iqn, newFile(dir, 1<<20))).To(Succeed())
		found, err := iscsi.Discover(ctx, second.Portal, iscsi.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(ContainElement(HaveField("IQN", iqn)))

		Expect(d.Stop(ctx)).To(Succeed())
		Expect(owner.Targets(ctx)).To(BeEmpty())
		Expect(alive(owner.PID())).To(BeTrue())
	})

	It("fails instead of hanging when tgtd cannot start", func() {
		opts.Portal = "192.0.2.1:1" // not an address of this machine
		_, err := tgt.Start(ctx, opts)
		Expect(err).To(HaveOccurred())
	})
})

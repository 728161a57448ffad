package db

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
)

// failingReader gives n bytes, then fails.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.ErrClosedPipe
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func configDriveSpecs(store func() *Store) {
	Describe("config drives", func() {
		It("stores a drive larger than a packet in pieces, outside the node row, and reads it back whole", func(ctx SpecContext) {
			s := store()
			n := newNode("cd")
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			// Base64-like text, not repetitive, 3.5 pieces long.
			const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
			raw := make([]byte, 3*configDriveChunk+configDriveChunk/2)
			for i := range raw {
				raw[i] = alphabet[rand.IntN(len(alphabet))]
			}
			id, err := s.SaveConfigDrive(ctx, n.ID, bytes.NewReader(raw))
			Expect(err).NotTo(HaveOccurred())
			Expect(countRows(ctx, s, "node_configdrives")).To(Equal(int64(4)))

			got, err := s.ConfigDrive(ctx, n.ID, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(string(raw)), "the drive reads back byte for byte")

			other := newNode("other")
			Expect(s.CreateNode(ctx, other)).To(Succeed())
			_, err = s.ConfigDrive(ctx, other.ID, id)
			Expect(err).To(MatchError(ContainSubstring("not found")), "a drive belongs to its node")
		})

		It("keeps an empty drive", func(ctx SpecContext) {
			s := store()
			n := newNode("empty")
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			id, err := s.SaveConfigDrive(ctx, n.ID, strings.NewReader(""))
			Expect(err).NotTo(HaveOccurred())
			Expect(s.ConfigDrive(ctx, n.ID, id)).To(Equal(""))
		})

		It("stores nothing when reading the drive fails half-way", func(ctx SpecContext) {
			s := store()
			n := newNode("broken")
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			_, err := s.SaveConfigDrive(ctx, n.ID, &failingReader{n: 2*configDriveChunk + 10})
			Expect(err).To(MatchError(io.ErrClosedPipe))
			Expect(countRows(ctx, s, "node_configdrives")).To(BeZero())
		})

		It("deletes one drive, all but one of a node, and all of a destroyed node", func(ctx SpecContext) {
			s := store()
			a, b := newNode("a"), newNode("b")
			Expect(s.CreateNode(ctx, a)).To(Succeed())
			Expect(s.CreateNode(ctx, b)).To(Succeed())
			save := func(nodeID int64) string {
				id, err := s.SaveConfigDrive(ctx, nodeID, strings.NewReader("H4sI"))
				Expect(err).NotTo(HaveOccurred())
				return id
			}
			a1, a2, a3, b1 := save(a.ID), save(a.ID), save(a.ID), save(b.ID)

			Expect(s.DeleteConfigDrive(ctx, a1)).To(Succeed())
			_, err := s.ConfigDrive(ctx, a.ID, a1)
			Expect(err).To(HaveOccurred())
			Expect(s.ConfigDrive(ctx, a.ID, a2)).To(Equal("H4sI"))

			Expect(s.DeleteNodeConfigDrives(ctx, a.ID, a3)).To(Succeed())
			_, err = s.ConfigDrive(ctx, a.ID, a2)
			Expect(err).To(HaveOccurred())
			Expect(s.ConfigDrive(ctx, a.ID, a3)).To(Equal("H4sI"))

			Expect(s.DestroyNode(ctx, a.UUID)).To(Succeed())
			Expect(countRows(ctx, s, "node_configdrives")).To(Equal(int64(1)))
			Expect(s.ConfigDrive(ctx, b.ID, b1)).To(Equal("H4sI"))

			Expect(s.DeleteNodeConfigDrives(ctx, b.ID, "")).To(Succeed())
			Expect(countRows(ctx, s, "node_configdrives")).To(BeZero())
			_, err = s.GetNode(ctx, a.UUID)
			Expect(errs.Is(err, errs.KindNodeNotFound)).To(BeTrue())
		})
	})
}

package db

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func bootISOSpecs(store func() *Store) {
	Describe("shared boot ISOs", func() {
		It("publishes an ISO for its first user only, counts every user and deletes it when the last one releases it", func(ctx SpecContext) {
			s := store()
			var published, removed int
			publish := func(context.Context) error { published++; return nil }
			remove := func(context.Context) error { removed++; return nil }

			Expect(s.AcquireBootISO(ctx, "boot-iso-a", publish)).To(Equal(1))
			Expect(s.AcquireBootISO(ctx, "boot-iso-a", publish)).To(Equal(2))
			Expect(published).To(Equal(1))
			Expect(s.BootISOUsage(ctx, "boot-iso-a")).To(Equal(2))

			Expect(s.ReleaseBootISO(ctx, "boot-iso-a", remove)).To(Equal(1))
			Expect(removed).To(Equal(0))
			Expect(s.ReleaseBootISO(ctx, "boot-iso-a", remove)).To(Equal(0))
			Expect(removed).To(Equal(1))
			Expect(countRows(ctx, s, "boot_isos")).To(BeZero())

			Expect(s.ReleaseBootISO(ctx, "boot-iso-a", remove)).To(Equal(0), "releasing an ISO nobody counts")
			Expect(removed).To(Equal(1))
			Expect(s.AcquireBootISO(ctx, "boot-iso-a", publish)).To(Equal(1))
			Expect(published).To(Equal(2), "a deleted ISO is published again")
		})

		It("counts nothing when publishing fails, and keeps the count when deleting fails", func(ctx SpecContext) {
			s := store()
			_, err := s.AcquireBootISO(ctx, "boot-iso-b", func(context.Context) error { return errors.New("swift is down") })
			Expect(err).To(MatchError("swift is down"))
			Expect(countRows(ctx, s, "boot_isos")).To(BeZero())

			Expect(s.AcquireBootISO(ctx, "boot-iso-b", func(context.Context) error { return nil })).To(Equal(1))
			_, err = s.ReleaseBootISO(ctx, "boot-iso-b", func(context.Context) error { return errors.New("swift is down") })
			Expect(err).To(MatchError(ContainSubstring("swift is down")))
			Expect(s.BootISOUsage(ctx, "boot-iso-b")).To(Equal(1))
		})

		It("publishes once and counts every user when many acquire at once", func(ctx SpecContext) {
			s := store()
			var published atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					_, err := s.AcquireBootISO(ctx, "boot-iso-c", func(context.Context) error { published.Add(1); return nil })
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(published.Load()).To(Equal(int32(1)))
			Expect(s.BootISOUsage(ctx, "boot-iso-c")).To(Equal(8))
		})
	})
}

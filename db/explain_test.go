package db

import (
	"context"
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gorm.io/gorm"
)

// explainRow is the part of MySQL's EXPLAIN output the specs judge.
type explainRow struct {
	Table string
	Type  string
	Key   *string
	Extra *string
}

// lastQuery records the last SELECT a store ran, with its arguments inlined.
type lastQuery struct {
	mu  sync.Mutex
	sql string
}

func (q *lastQuery) get() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sql
}

func indexSpecs() {
	Describe("node list queries on a large table", Ordered, func() {
		var (
			s    *Store
			last = &lastQuery{}
		)
		const nodes = 4000

		BeforeAll(func(ctx SpecContext) {
			s = freshStore(ctx, DialectMySQL, "explain")
			Expect(s.Upgrade(ctx)).To(Succeed())
			// Twenty values per filter column: any one of them selects a
			// twentieth of the table, which an index reads faster than a scan.
			var rows []string
			for i := range nodes {
				rows = append(rows, fmt.Sprintf("(UUID(), 'node-%d', 'driver-%d', 'state-%d', 'group-%d', 'class-%d', 'owner-%d', 'lessee-%d', NOW(6), 0, 0, '{}', '{}', '{}', '{}', '{}', '{}')",
					i, i%20, (i/20)%20, i%19, i%17, i%13, i%11))
			}
			for len(rows) > 0 {
				n := min(500, len(rows))
				Expect(s.db.WithContext(ctx).Exec(`INSERT INTO nodes (uuid, name, driver, provision_state, conductor_group,
					resource_class, owner, lessee, created_at, maintenance, retired,
					driver_info, driver_internal_info, properties, instance_info, extra, clean_step) VALUES ` + strings.Join(rows[:n], ",")).Error).To(Succeed())
				rows = rows[n:]
			}
			Expect(s.db.WithContext(ctx).Exec("ANALYZE TABLE nodes").Error).To(Succeed())
			record := func(tx *gorm.DB) {
				last.mu.Lock()
				defer last.mu.Unlock()
				last.sql = tx.Dialector.Explain(tx.Statement.SQL.String(), tx.Statement.Vars...)
			}
			Expect(s.db.Callback().Query().After("gorm:query").Register("test:last", record)).To(Succeed())
			Expect(s.db.Callback().Row().After("gorm:row").Register("test:last", record)).To(Succeed())
		})

		explain := func(ctx context.Context, f NodeFilter, p Page) []explainRow {
			GinkgoHelper()
			_, err := s.ListNodes(ctx, f, p, nil)
			Expect(err).NotTo(HaveOccurred())
			sql := last.get()
			Expect(sql).To(HavePrefix("SELECT"))
			var plan []explainRow
			rows, err := s.db.WithContext(ctx).Raw("EXPLAIN " + sql).Rows()
			Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			cols, err := rows.Columns()
			Expect(err).NotTo(HaveOccurred())
			for rows.Next() {
				vals := make([]any, len(cols))
				var r explainRow
				for i, c := range cols {
					switch c {
					case "table":
						vals[i] = &r.Table
					case "type":
						vals[i] = &r.Type
					case "key":
						vals[i] = &r.Key
					case "Extra":
						vals[i] = &r.Extra
					default:
						vals[i] = new(any)
					}
				}
				Expect(rows.Scan(vals...)).To(Succeed())
				plan = append(plan, r)
			}
			Expect(rows.Err()).NotTo(HaveOccurred())
			Expect(plan).NotTo(BeEmpty())
			return plan
		}

		// usesIndex: every step of the plan reads the nodes table through
		// the named index, never by scanning the table.
		usesIndex := func(plan []explainRow, index string) {
			GinkgoHelper()
			for _, r := range plan {
				Expect(r.Type).NotTo(Equal("ALL"), "full scan: %+v", r)
			}
			var keys []string
			for _, r := range plan {
				if r.Key != nil {
					keys = append(keys, *r.Key)
				}
			}
			Expect(keys).To(ContainElement(index), "plan %+v", plan)
		}

		// seeksFromMarker: the next page's statement holds the marker's id
		// as a literal. As a subquery MariaDB cannot seek the filter's index
		// to it and walks the index from the start, seconds per page at
		// 100,000 nodes.
		seeksFromMarker := func(plan []explainRow) {
			GinkgoHelper()
			Expect(plan).To(HaveLen(1), "the page reads the marker inside its statement: %+v", plan)
		}

		str := func(v string) *string { return &v }
		for _, tc := range []struct {
			name   string
			filter NodeFilter
			index  string
		}{
			{"provision_state", NodeFilter{ProvisionStates: []string{"state-3"}}, "idx_nodes_provision_state"},
			{"driver", NodeFilter{Driver: str("driver-3")}, "idx_nodes_driver"},
			{"conductor_group", NodeFilter{ConductorGroup: str("group-3")}, "idx_nodes_conductor_group"},
			{"resource_class", NodeFilter{ResourceClass: str("class-3")}, "idx_nodes_resource_class"},
			{"owner", NodeFilter{Owner: str("owner-3")}, "idx_nodes_owner"},
			{"lessee", NodeFilter{Lessee: str("lessee-3")}, "idx_nodes_lessee"},
		} {
			It("serves ?"+tc.name+"= from an index, first page and next", func(ctx SpecContext) {
				usesIndex(explain(ctx, tc.filter, Page{Limit: 100}), tc.index)
				page, err := s.ListNodes(ctx, tc.filter, Page{Limit: 100}, []string{"uuid"})
				Expect(err).NotTo(HaveOccurred())
				Expect(page).NotTo(BeEmpty())
				next := explain(ctx, tc.filter, Page{Limit: 100, Marker: page[len(page)-1].UUID})
				usesIndex(next, tc.index)
				seeksFromMarker(next)
			})
		}

		It("pages the unfiltered list by primary key", func(ctx SpecContext) {
			usesIndex(explain(ctx, NodeFilter{}, Page{Limit: 1000}), "PRIMARY")
			page, err := s.ListNodes(ctx, NodeFilter{}, Page{Limit: 1000}, []string{"uuid"})
			Expect(err).NotTo(HaveOccurred())
			next := explain(ctx, NodeFilter{}, Page{Limit: 1000, Marker: page[len(page)-1].UUID})
			usesIndex(next, "PRIMARY")
			seeksFromMarker(next)
		})
	})
}

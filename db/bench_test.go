package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

const benchNodes = 1000

// benchStore opens a migrated store holding benchNodes nodes: on MySQL
// (the production backend) unless FERRIC_TEST_MYSQL=none, else SQLite.
func benchStore(b *testing.B) (*Store, []string) {
	b.Helper()
	ctx := context.Background()
	url := dbtest.SQLiteURL(b.TempDir())
	if !dbtest.MySQLDisabled() {
		u, drop, err := dbtest.NewMySQLDatabase(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = drop() })
		url = u
	}
	s := openBench(b, url)
	uuids := make([]string, 0, benchNodes)
	for i := range benchNodes {
		n := &model.Node{
			Name:           ptr(fmt.Sprintf("node-%04d", i)),
			Driver:         "ipmi",
			ProvisionState: ptr("available"),
			PowerState:     ptr("power off"),
			DriverInfo:     model.JSONObject{"ipmi_address": fmt.Sprintf("10.0.%d.%d", i/250, i%250), "ipmi_password": "pw"},
			Properties:     model.JSONObject{"cpus": float64(16), "memory_mb": float64(65536), "local_gb": float64(900)},
			InstanceInfo:   model.JSONObject{"image_source": "http://images/img.qcow2", "root_gb": float64(20)},
		}
		if err := s.CreateNode(ctx, n); err != nil {
			b.Fatal(err)
		}
		uuids = append(uuids, n.UUID)
	}
	b.Logf("backend %s, %d nodes", s.Dialect(), benchNodes)
	return s, uuids
}

// openBench opens and migrates the store at url, closed when b ends.
func openBench(b *testing.B, url string) *Store {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Upgrade(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkGetNode(b *testing.B) {
	s, uuids := benchStore(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := s.GetNode(ctx, uuids[i%len(uuids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListNodes100 is the API's default node list: a page of 100
// with the six default fields.
func BenchmarkListNodes100(b *testing.B) {
	s, _ := benchStore(b)
	ctx := context.Background()
	cols := []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}
	for b.Loop() {
		nodes, err := s.ListNodes(ctx, NodeFilter{}, Page{Limit: 100}, cols)
		if err != nil {
			b.Fatal(err)
		}
		if len(nodes) != 100 {
			b.Fatalf("got %d nodes", len(nodes))
		}
	}
}

// benchVolumes gives every bench node one connector and one target with
// CHAP properties, as make bench seeds them.
func benchVolumes(b *testing.B, s *Store, uuids []string) {
	b.Helper()
	ctx := context.Background()
	for i, u := range uuids {
		n, err := s.GetNode(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: n.ID, Type: "iqn",
			ConnectorID: fmt.Sprintf("iqn.2026-01.bench:node-%d", i), Extra: model.JSONObject{}}); err != nil {
			b.Fatal(err)
		}
		if err := s.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: n.ID, VolumeType: "iscsi", VolumeID: fmt.Sprintf("vol-%d", i),
			Extra: model.JSONObject{}, Properties: model.JSONObject{"target_iqn": fmt.Sprintf("iqn.2026-01.bench:vol-%d", i),
				"target_lun": float64(0), "auth_method": "CHAP", "auth_username": "u", "auth_password": "secret"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListVolumeConnectors100 and BenchmarkListVolumeTargets100 read
// pages of 100 after a marker, every column, as the API's detail lists do.
func BenchmarkListVolumeConnectors100(b *testing.B) {
	s, uuids := benchStore(b)
	benchVolumes(b, s, uuids)
	ctx := context.Background()
	all, err := s.ListVolumeConnectors(ctx, VolumeFilter{}, Page{}, []string{"uuid"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		page, err := s.ListVolumeConnectors(ctx, VolumeFilter{}, Page{Limit: 100, Marker: all[(i*97)%(len(all)-100)].UUID}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) != 100 {
			b.Fatalf("got %d connectors", len(page))
		}
	}
}

func BenchmarkListVolumeTargets100(b *testing.B) {
	s, uuids := benchStore(b)
	benchVolumes(b, s, uuids)
	ctx := context.Background()
	all, err := s.ListVolumeTargets(ctx, VolumeFilter{}, Page{}, []string{"uuid"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		page, err := s.ListVolumeTargets(ctx, VolumeFilter{}, Page{Limit: 100, Marker: all[(i*97)%(len(all)-100)].UUID}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) != 100 {
			b.Fatalf("got %d targets", len(page))
		}
	}
}

// BenchmarkListNodesDetail100 is the API's detail list: pages of 100
// after a marker, every column.
func BenchmarkListNodesDetail100(b *testing.B) {
	s, uuids := benchStore(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		nodes, err := s.ListNodes(ctx, NodeFilter{}, Page{Limit: 100, Marker: uuids[(i*97)%(len(uuids)-100)]}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(nodes) != 100 {
			b.Fatalf("got %d nodes", len(nodes))
		}
	}
}

// BenchmarkListNodesFilteredDeep reads filtered pages of 100, every
// column, each after a marker anywhere in a fleet-shaped table of 100,000
// nodes (MySQL only: the plan it measures is MariaDB's). One sub-benchmark
// per filter; p50-ms and p99-ms are the pages' latencies.
func BenchmarkListNodesFilteredDeep(b *testing.B) {
	if dbtest.MySQLDisabled() {
		b.Skip("MySQL disabled")
	}
	ctx := context.Background()
	u, drop, err := dbtest.NewMySQLDatabase(ctx, "benchdeep")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop() })
	s := openBench(b, u)
	const nodes = 100_000
	// As the fleet bench seeds them: one driver and conductor group, ten
	// resource classes, a third manageable.
	rows := make([]string, 0, 1000)
	for i := range nodes {
		state := "available"
		if i%3 == 0 {
			state = "manageable"
		}
		rows = append(rows, fmt.Sprintf("(UUID(), 'node-%d', 'fake-hardware', '%s', 'rack-1', 'class-%d', 'owner-%d', NOW(6), "+
			`'{"ipmi_address": "10.0.0.1"}', '{"cpus": 16, "memory_mb": 65536}', '{}', '{}')`, i, state, i%10, i%7))
		if len(rows) == cap(rows) || i == nodes-1 {
			if err := s.db.WithContext(ctx).Exec(`INSERT INTO nodes (uuid, name, driver, provision_state, conductor_group,
				resource_class, owner, created_at, driver_info, properties, instance_info, extra) VALUES ` + strings.Join(rows, ",")).Error; err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := s.db.WithContext(ctx).Exec("ANALYZE TABLE nodes").Error; err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		filter NodeFilter
	}{
		{"provision_state=manageable", NodeFilter{ProvisionStates: []string{"manageable"}}},
		{"provision_state=available", NodeFilter{ProvisionStates: []string{"available"}}},
		{"driver", NodeFilter{Match: []filter.Condition{{Column: "driver", Value: "fake-hardware"}}}},
		{"conductor_group", NodeFilter{Match: []filter.Condition{{Column: "conductor_group", Value: "rack-1"}}}},
		{"resource_class", NodeFilter{Match: []filter.Condition{{Column: "resource_class", Value: "class-3"}}}},
		{"owner", NodeFilter{Match: []filter.Condition{{Column: "owner", Value: "owner-3"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			all, err := s.ListNodes(ctx, tc.filter, Page{}, []string{"uuid"})
			if err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				page, err := s.ListNodes(ctx, tc.filter, Page{Limit: 100, Marker: all[(i*7919)%(len(all)-100)].UUID}, nil)
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != 100 {
					b.Fatalf("got %d nodes", len(page))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

package db

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gorm.io/gorm"

	"github.com/ferricbm/ferric/pkg/model"
)

// models are the gorm models of the tables the migrations create.
var models = []any{
	&model.Node{}, &model.Port{}, &model.Chassis{}, &model.Portgroup{}, &model.Allocation{},
	&model.Conductor{}, &model.ConductorHardwareInterface{},
	&model.VolumeConnector{}, &model.VolumeTarget{},
}

// unmodelled are the tables the store reaches with plain SQL only.
var unmodelled = []string{"node_configdrives", "boot_isos", "schema_migrations"}

// tableShape is what a table enforces: its columns' types and nullability
// and its indexes.
type tableShape struct {
	Columns map[string]string
	Indexes map[string]string
}

// drift lists where the declared shape d differs from the migrated one m.
func (d tableShape) drift(table string, m tableShape) []string {
	var out []string
	compare := func(kind string, declared, migrated map[string]string) {
		for _, name := range slices.Sorted(maps.Keys(migrated)) {
			if declared[name] != migrated[name] {
				out = append(out, fmt.Sprintf("%s %s.%s: model %q, migrations %q", kind, table, name, declared[name], migrated[name]))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(declared)) {
			if _, ok := migrated[name]; !ok {
				out = append(out, fmt.Sprintf("%s %s.%s: model %q, not in the migrations", kind, table, name, declared[name]))
			}
		}
	}
	compare("column", d.Columns, m.Columns)
	compare("index", d.Indexes, m.Indexes)
	return out
}

// shapeOf reads a table's shape back from the database. On MySQL a column
// is its full type; on SQLite, which stores whatever it is given, only the
// type affinity the declared type maps to has any effect, so that is what
// is compared. SQLite's nullability comes from SQLite itself: gorm's
// driver parses the stored CREATE TABLE text and misreads a column that
// ALTER TABLE ADD COLUMN appended.
func shapeOf(g *gorm.DB, dialect, table string) tableShape {
	GinkgoHelper()
	m := g.Migrator()
	cols, err := m.ColumnTypes(table)
	Expect(err).NotTo(HaveOccurred())
	notNull := map[string]bool{}
	if dialect == DialectSQLite {
		var info []struct {
			Name    string
			NotNull bool `gorm:"column:notnull"`
		}
		Expect(g.Raw(`SELECT name, "notnull" FROM pragma_table_info(?)`, table).Scan(&info).Error).To(Succeed())
		for _, c := range info {
			notNull[c.Name] = c.NotNull
		}
	}
	shape := tableShape{Columns: map[string]string{}, Indexes: map[string]string{}}
	for _, c := range cols {
		typ, _ := c.ColumnType()
		if dialect == DialectSQLite {
			typ = sqliteAffinity(c.DatabaseTypeName())
		}
		null, _ := c.Nullable()
		if dialect == DialectSQLite {
			null = !notNull[c.Name()]
		}
		pk, _ := c.PrimaryKey()
		shape.Columns[c.Name()] = fmt.Sprintf("%s null=%t pk=%t", strings.ToLower(typ), null && !pk, pk)
	}
	idx, err := m.GetIndexes(table)
	Expect(err).NotTo(HaveOccurred())
	for _, i := range idx {
		unique, _ := i.Unique()
		if pk, _ := i.PrimaryKey(); pk {
			continue
		}
		shape.Indexes[i.Name()] = fmt.Sprintf("unique=%t (%s)", unique, strings.Join(i.Columns(), ", "))
	}
	return shape
}

// sqliteAffinity applies SQLite's rules for a declared column type
// (https://www.sqlite.org/datatype3.html, section 3.1).
func sqliteAffinity(declared string) string {
	t := strings.ToUpper(declared)
	switch {
	case strings.Contains(t, "INT"):
		return "INTEGER"
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return "TEXT"
	case t == "", strings.Contains(t, "BLOB"):
		return "BLOB"
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

var _ = Describe("the gorm models", func() {
	for _, backend := range backends {
		It("declare the tables the migrations create, column for column and index for index, on "+backend, func(ctx SpecContext) {
			migrated := freshStore(ctx, backend, "schema_migrated")
			Expect(migrated.Upgrade(ctx)).To(Succeed())
			declared := freshStore(ctx, backend, "schema_declared")
			Expect(declared.db.WithContext(ctx).AutoMigrate(models...)).To(Succeed())

			tables, err := migrated.db.WithContext(ctx).Migrator().GetTables()
			Expect(err).NotTo(HaveOccurred())
			var modelled []string
			for _, m := range models {
				modelled = append(modelled, m.(interface{ TableName() string }).TableName())
			}
			for _, t := range tables {
				if !strings.HasPrefix(t, "sqlite_") {
					Expect(slices.Contains(modelled, t) || slices.Contains(unmodelled, t)).To(BeTrue(),
						"table %s has neither a model nor a place among the tables reached with plain SQL", t)
				}
			}
			var drift []string
			for _, t := range modelled {
				drift = append(drift, shapeOf(declared.db.WithContext(ctx), backend, t).drift(t, shapeOf(migrated.db.WithContext(ctx), backend, t))...)
			}
			Expect(drift).To(BeEmpty(), "what the models declare against what the migrations create:\n%s", strings.Join(drift, "\n"))
		})
	}
})

var _ = Describe("sqliteAffinity", func() {
	DescribeTable("follows SQLite's rules",
		func(declared, affinity string) { Expect(sqliteAffinity(declared)).To(Equal(affinity)) },
		Entry(nil, "BIGINT", "INTEGER"),
		Entry(nil, "varchar(36)", "TEXT"),
		Entry(nil, "mediumtext", "TEXT"),
		Entry(nil, "DATETIME", "NUMERIC"),
		Entry(nil, "BOOLEAN", "NUMERIC"),
		Entry(nil, "", "BLOB"),
	)
})

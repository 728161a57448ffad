package query_test

import (
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
)

var _ = Describe("Filters", func() {
	rows := []catalogue.FilterRow{
		{Column: "instance_uuid", Filter: catalogue.Filter{Param: "instance_uuid", Op: filter.Equal, Value: catalogue.UUIDValue}},
		{Column: "instance_uuid", Filter: catalogue.Filter{Param: "associated", Op: filter.Set, Value: catalogue.BoolValue}},
		{Column: "state", Filter: catalogue.Filter{Param: "state", Op: filter.In, Value: catalogue.ListValue,
			Check: func(s string) (string, error) {
				if s == "bogus" {
					return "", errs.InvalidParameterValue("Provision state \"%s\" is not valid", s)
				}
				return s, nil
			}}},
		{Column: "group", Filter: catalogue.Filter{Param: "group", Op: filter.Equal, Check: func(s string) (string, error) { return strings.ToLower(s), nil }}},
	}

	It("reads each parameter as its row says, in parameter order, and carries what the client sent", func() {
		q := url.Values{"state": {"active,available"}, "associated": {"YES"}, "group": {"RackA"},
			"instance_uuid": {"7D1A9A3C-6F1B-4E4C-9B7A-2D0E7E2B1C11"}, "limit": {"5"}}
		conds, carry, err := query.Filters(rows, q)
		Expect(err).NotTo(HaveOccurred())
		Expect(conds).To(Equal([]filter.Cond{
			{Column: "instance_uuid", Op: filter.Set, Value: true},
			{Column: "group", Op: filter.Equal, Value: "racka"},
			{Column: "instance_uuid", Op: filter.Equal, Value: "7d1a9a3c-6f1b-4e4c-9b7a-2d0e7e2b1c11"},
			{Column: "state", Op: filter.In, Value: []string{"active", "available"}},
		}))
		Expect(carry).To(Equal([]query.Param{{Key: "associated", Value: "True"}, {Key: "group", Value: "RackA"},
			{Key: "instance_uuid", Value: "7D1A9A3C-6F1B-4E4C-9B7A-2D0E7E2B1C11"}, {Key: "state", Value: "active,available"}}))
	})

	DescribeTable("refuses a value its row does not take with a 400",
		func(q url.Values, message string) {
			_, _, err := query.Filters(rows, q)
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a UUID", url.Values{"instance_uuid": {"not-a-uuid"}}, "Expected a UUID for instance_uuid but received not-a-uuid."),
		Entry("a boolean", url.Values{"associated": {"maybe"}}, "associated"),
		Entry("one value of a list", url.Values{"state": {"active,bogus"}}, `Provision state "bogus" is not valid`),
	)
})

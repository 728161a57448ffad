package driverinfo_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("driver_info values", func() {
	It("reads integers from JSON numbers and decimal strings only", func() {
		for _, v := range []any{float64(623), " 623", 623} {
			n, ok := driverinfo.Int(v)
			Expect(ok).To(BeTrue(), "%#v", v)
			Expect(n).To(Equal(623))
		}
		for _, v := range []any{1.5, "0x10", true, nil, float64(1 << 40)} {
			_, ok := driverinfo.Int(v)
			Expect(ok).To(BeFalse(), "%#v", v)
		}
	})

	It("checks ports with Ironic's messages", func() {
		_, err := driverinfo.Port("https", "client_port")
		Expect(err).To(MatchError(`client_port "https" is not a valid integer.`))
		_, err = driverinfo.Port(float64(0), "client_port")
		Expect(err).To(MatchError(`client_port "0" is out of range. Valid port numbers must be between 1 and 65535.`))
		e, ok := errs.As(err)
		Expect(ok).To(BeTrue())
		Expect(e.Kind).To(Equal(errs.KindInvalidParameterValue))
		Expect(driverinfo.Port("443", "client_port")).To(Equal(443))
	})

	It("reads strings, keeping the text of unquoted numbers", func() {
		info := model.JSONObject{"a": "x", "b": float64(1234), "c": []any{"x"}}
		Expect(driverinfo.String(info, "a")).To(Equal("x"))
		Expect(driverinfo.String(info, "b")).To(Equal("1234"))
		Expect(driverinfo.String(info, "missing")).To(Equal(""))
		_, err := driverinfo.String(info, "c")
		Expect(err).To(MatchError("c must be a string."))
	})

	It("lists the required keys that are absent or blank, keeping values' spaces", func() {
		info := model.JSONObject{"address": "bmc", "user": "  ", "password": " pw "}
		vals, missing, err := driverinfo.Required(info, "address", "user", "password", "port")
		Expect(err).NotTo(HaveOccurred())
		Expect(missing).To(Equal([]string{"user", "port"}))
		Expect(vals).To(HaveKeyWithValue("password", " pw "))
		_, _, err = driverinfo.Required(model.JSONObject{"address": []any{}}, "address")
		Expect(err).To(MatchError("address must be a string."))
	})

	It("formats lists as Python does", func() {
		Expect(driverinfo.PyList([]string{"a", "b"})).To(Equal("['a', 'b']"))
		Expect(driverinfo.PyList(nil)).To(Equal("[]"))
	})
})

package ribcl

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("reading an iLO answer", func() {
	It("takes the data from the concatenated documents after the login's", func() {
		body := "<?xml version=\"1.0\"?>\r\n<RIBCL VERSION=\"2.23\">\r\n<RESPONSE STATUS=\"0x0000\" MESSAGE='No error'/>\r\n</RIBCL>\r\n" +
			"<?xml version=\"1.0\"?>\r\n<RIBCL VERSION=\"2.23\">\r\n<RESPONSE STATUS=\"0x0000\" MESSAGE='No error'/>\r\n<GET_HOST_POWER HOST_POWER=\"ON\"/>\r\n</RIBCL>\r\n"
		e, err := parseResponse("get host power status", []byte(body))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.XMLName.Local).To(Equal("GET_HOST_POWER"))
		Expect(e.Attr("host_power")).To(Equal("ON"))
	})

	It("fails on the first non-zero status, read as hex", func() {
		body := `<?xml version="1.0"?><RIBCL VERSION="2.23"><RESPONSE STATUS="0x0000" MESSAGE="No error"/></RIBCL>` +
			`<?xml version="1.0"?><RIBCL VERSION="2.23"><RESPONSE STATUS="0x0035" MESSAGE="An invalid Virtual Media option has been given."/></RIBCL>`
		_, err := parseResponse("insert virtual media", []byte(body))
		var se *StatusError
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(se.Code).To(Equal(0x35))
		Expect(err.Error()).To(Equal("iLO insert virtual media failed: status 0x0035: An invalid Virtual Media option has been given."))
	})

	It("takes a login message with another code as a login failure", func() {
		body := `<?xml version="1.0"?><RIBCL VERSION="2.23"><RESPONSE STATUS="0x0001" MESSAGE="Login credentials rejected."/></RIBCL>`
		_, err := parseResponse("get product name", []byte(body))
		Expect(errors.Is(err, ErrLogin)).To(BeTrue())
	})

	It("returns the message of a zero status that is not 'No error'", func() {
		body := `<?xml version="1.0"?><RIBCL VERSION="2.23"><RESPONSE STATUS="0x0000" MESSAGE="Server is already powered on."/></RIBCL>`
		e, err := parseResponse("set host power", []byte(body))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Attr("VALUE")).To(Equal("Server is already powered on."))
	})

	It("rejects an answer that is not XML", func() {
		_, err := parseResponse("get product name", []byte("<html><body>Not found</body"))
		Expect(err).To(MatchError(ContainSubstring("unreadable answer")))
	})

	It("escapes attribute values", func() {
		Expect(escape(`a&b<"c">`)).To(Equal("a&amp;b&lt;&#34;c&#34;&gt;"))
	})
})

var _ = Describe("hiding the password in the iLO's messages", func() {
	It("masks the password, raw or escaped, quoted back in a syntax error", func() {
		c, err := New(Config{Address: "127.0.0.1", Username: "admin", Password: `pa&ss"word`})
		Expect(err).NotTo(HaveOccurred())
		msg := c.scrub(`Syntax error: Line #3: syntax error near ">" in the line: " <LOGIN USER_LOGIN="admin" PASSWORD="pa&amp;ss&#34;word">"; pa&ss"word`)
		Expect(msg).NotTo(ContainSubstring("pa&"))
		Expect(msg).NotTo(ContainSubstring("word"))
		Expect(msg).To(ContainSubstring("USER_LOGIN"))
	})
})

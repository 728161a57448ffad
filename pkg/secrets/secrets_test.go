package secrets_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
)

var _ = Describe("IsSensitiveKey", func() {
	DescribeTable("masks credential-like keys, whatever their case",
		func(k string) { Expect(secrets.IsSensitiveKey(k)).To(BeTrue()) },
		Entry(nil, "ipmi_password"),
		Entry(nil, "IPMI_Password"),
		Entry(nil, "ilo_password"),
		Entry(nil, "auth_password"),
		Entry(nil, "agent_secret_token"),
		Entry(nil, "configdrive"),
		Entry(nil, "chapsecret"),
		Entry(nil, "snmp_auth_key"),
		Entry(nil, "snmp_priv_key"),
		Entry(nil, "ssl_private_key"),
		Entry(nil, "RabbitCookie"),
		Entry(nil, "deploy_key"),
		Entry(nil, "swift_temp_url_key"),
	)

	DescribeTable("leaves ordinary keys alone",
		func(k string) { Expect(secrets.IsSensitiveKey(k)).To(BeFalse()) },
		Entry(nil, "ipmi_username"),
		Entry(nil, "auth_username"),
		Entry(nil, "target_iqn"),
		Entry(nil, "target_portal"),
		Entry(nil, "target_lun"),
		Entry(nil, "ipmi_address"),
		Entry(nil, "image_source"),
		Entry(nil, "snmp_version"),
		Entry(nil, "key"),
	)
})

var _ = Describe("Mask", func() {
	It("masks sensitive values at every depth and leaves the input untouched", func() {
		var in map[string]any
		Expect(json.Unmarshal([]byte(`{
			"ipmi_username": "admin",
			"ipmi_password": "s3cr3t",
			"nested": {"auth_password": "p", "auth_username": "u", "deeper": {"token": 42}},
			"list": [{"chappassword": "c"}, "plain", ["x", {"secret": null}]],
			"port": 623
		}`), &in)).To(Succeed())

		out := secrets.Mask(in)
		Expect(out).To(Equal(map[string]any{
			"ipmi_username": "admin",
			"ipmi_password": "******",
			"nested": map[string]any{
				"auth_password": "******", "auth_username": "u",
				"deeper": map[string]any{"token": "******"},
			},
			"list": []any{map[string]any{"chappassword": "******"}, "plain", []any{"x", map[string]any{"secret": "******"}}},
			"port": float64(623),
		}))

		Expect(in["ipmi_password"]).To(Equal("s3cr3t"))
		Expect(in["nested"].(map[string]any)["auth_password"]).To(Equal("p"))
		Expect(in["list"].([]any)[0].(map[string]any)["chappassword"]).To(Equal("c"))
	})

	It("masks a sensitive key's whole value, even an object", func() {
		out := secrets.Mask(map[string]any{"configdrive": map[string]any{"user_data": "#cloud-config"}})
		Expect(out["configdrive"]).To(Equal("******"))
	})

	It("copies so that editing the result does not reach the input", func() {
		in := map[string]any{"a": map[string]any{"b": "c"}, "l": []any{"x"}}
		out := secrets.Mask(in)
		out["a"].(map[string]any)["b"] = "changed"
		out["l"].([]any)[0] = "changed"
		Expect(in["a"].(map[string]any)["b"]).To(Equal("c"))
		Expect(in["l"].([]any)[0]).To(Equal("x"))
	})

	It("handles the model's JSON object and string maps", func() {
		out := secrets.Mask(map[string]any{
			"obj":  model.JSONObject{"password": "p", "user": "u"},
			"strs": map[string]string{"ilo_password": "p", "ilo_address": "10.0.0.1"},
			"objs": []map[string]any{{"token": "t"}},
		})
		Expect(out["obj"]).To(Equal(model.JSONObject{"password": "******", "user": "u"}))
		Expect(out["strs"]).To(Equal(map[string]string{"ilo_password": "******", "ilo_address": "10.0.0.1"}))
		Expect(out["objs"]).To(Equal([]map[string]any{{"token": "******"}}))
	})

	It("scrubs password fragments from other strings", func() {
		out := secrets.Mask(map[string]any{"cmdline": "ipa-api-url=http://x password=hunter2 debug=1"})
		Expect(out["cmdline"]).To(Equal("ipa-api-url=http://x password=****** debug=1"))
	})

	It("keeps nil as nil", func() {
		Expect(secrets.Mask(nil)).To(BeNil())
	})
})

var _ = Describe("MaskString", func() {
	DescribeTable("scrubs",
		func(in, want string) { Expect(secrets.MaskString(in)).To(Equal(want)) },
		Entry("key=value", "user=a password=b", "user=a password=******"),
		Entry("JSON", `{"ipmi_password": "b", "x": 1}`, `{"ipmi_password": "******", "x": 1}`),
		Entry("Python repr", `{'auth_token': 'abc'}`, `{'auth_token': '******'}`),
		Entry("query string", "/v1/x?token=abc&y=1", "/v1/x?token=******&y=1"),
		Entry("URL user info", "mysql://root:pw@127.0.0.1:3306/ferric", "mysql://root:******@127.0.0.1:3306/ferric"),
		Entry("password holding @", "mysql://ferric:p@ss@db/ferric", "mysql://ferric:******@db/ferric"),
		Entry("AMQP URL", "amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:******@127.0.0.1:5672/"),
		Entry("nothing secret", "power on failed: timeout after 60s", "power on failed: timeout after 60s"),
		Entry("URL with a port only", "http://127.0.0.1:6385/v1", "http://127.0.0.1:6385/v1"),
		Entry("IQN", "iqn.2026-01.org.example:vol-1", "iqn.2026-01.org.example:vol-1"),
		Entry("secret word in other case", "Admin_PassWord: x", "Admin_PassWord: ******"),
		Entry("secret word spelt with a long s", "paſsword=x", "paſsword=******"),
		Entry("URL user info without a secret word", "ftp://u:p@host/f and key=1", "ftp://u:******@host/f and key=1"),
		Entry("deployment key", "callback refused: deployment_key=abc123", "callback refused: deployment_key=******"),
		Entry("passwd", "ipmi passwd=hunter2 failed", "ipmi passwd=****** failed"),
		Entry("pwd", "login pwd=hunter2", "login pwd=******"),
		Entry("temp URL signature", "GET /v1/AUTH_x/c/o?temp_url_sig=abcdef&temp_url_expires=1", "GET /v1/AUTH_x/c/o?temp_url_sig=******&temp_url_expires=1"),
		Entry("sig query value", "insert failed for http://h/f.img?expires=1&sig=abcdef: 500", "insert failed for http://h/f.img?expires=1&sig=******: 500"),
		Entry("sig query value escaped in XML", `<IMAGE_URL value="http://h/f?e=1&amp;sig=abcdef"/>`, `<IMAGE_URL value="http://h/f?e=1&amp;sig=******"/>`),
		Entry("sig as the first query value", "http://h/f?sig=abcdef", "http://h/f?sig=******"),
		Entry("Authorization: Basic", "proxy said: Authorization: Basic YWRtaW46cHc= was refused", "proxy said: Authorization: ****** was refused"),
		Entry("Authorization: Bearer", "authorization=Bearer abc.def", "authorization=******"),
	)

	// The forms of oslo.utils' mask_password: a quoted value goes whole,
	// spaces and all, never just its first word.
	DescribeTable("masks oslo's forms whole",
		func(in, want string) {
			got := secrets.MaskString(in)
			Expect(got).To(Equal(want))
			Expect(got).NotTo(ContainSubstring("words"))
		},
		Entry("double-quoted key=value", `login failed: password="two words" user=admin`, `login failed: password="******" user=admin`),
		Entry("single-quoted key=value", `admin_pass='two words', retries=3`, `admin_pass='******', retries=3`),
		Entry("spaces around =", `secret = "two words"`, `secret = "******"`),
		Entry("JSON", `{"auth_password": "two words", "auth_username": "u"}`, `{"auth_password": "******", "auth_username": "u"}`),
		Entry("JSON with an escaped quote", `{"token": "two \" words", "n": 1}`, `{"token": "******", "n": 1}`),
		Entry("compact JSON", `{"ipmi_password":"two words"}`, `{"ipmi_password":"******"}`),
		Entry("Python repr", `{'auth_key': 'two words'}`, `{'auth_key': '******'}`),
		Entry("XML element", `<user>u</user><password>two words</password>`, `<user>u</user><password>******</password>`),
		Entry("XML element of a longer key", `<ipmi_password>two words</ipmi_password>`, `<ipmi_password>******</ipmi_password>`),
		Entry("command-line option", `ipmitool -U admin --password words -H h`, `ipmitool -U admin --password ****** -H h`),
		Entry("quoted command-line argument", `mount --secret "two words" /mnt`, `mount --secret "******" /mnt`),
		Entry("URL user info", `GET http://admin:words@10.0.0.1/redfish`, `GET http://admin:******@10.0.0.1/redfish`),
		Entry("several in one message", `password="two words" then token='more words' and http://u:words@h/`,
			`password="******" then token='******' and http://u:******@h/`),
	)

	DescribeTable("leaves text without a secret alone",
		func(in string) { Expect(secrets.MaskString(in)).To(Equal(in)) },
		Entry("a quoted ordinary value", `user="two words"`),
		Entry("an ordinary XML element", `<user>two words</user>`),
		Entry("an ordinary option", `--username admin`),
		Entry("a plain value", `CHAP`),
		Entry("a word ending in sig", `design=flat`),
		Entry("a signature parameter", `http://h/f?signature_version=2`),
	)
})

var _ = Describe("MaskInstanceInfo", func() {
	It("also hides configdrive and image_url when set", func() {
		out := secrets.MaskInstanceInfo(map[string]any{
			"image_source": "http://img/x.qcow2",
			"image_url":    "http://swift/v1/AUTH_x/img?temp_url_sig=abc",
			"configdrive":  "H4sIAAAA",
			"root_gb":      10,
		})
		Expect(out).To(Equal(map[string]any{
			"image_source": "http://img/x.qcow2",
			"image_url":    "******",
			"configdrive":  "******",
			"root_gb":      10,
		}))
	})

	It("leaves an unset image_url visible as unset", func() {
		out := secrets.MaskInstanceInfo(map[string]any{"image_url": nil})
		Expect(out).To(HaveKeyWithValue("image_url", BeNil()))
		Expect(secrets.MaskInstanceInfo(nil)).To(BeNil())
	})
})

var _ = Describe("Generate", func() {
	It("makes alphanumeric strings of the asked length, a different one each time", func() {
		seen := map[string]bool{}
		for range 50 {
			s, err := secrets.Generate(24)
			Expect(err).NotTo(HaveOccurred())
			Expect(s).To(MatchRegexp(`^[A-Za-z0-9]{24}$`))
			Expect(seen).NotTo(HaveKey(s))
			seen[s] = true
		}
	})
})

// Package secrets hides credentials from API responses and logs. The rules
// are Ironic's: a key is secret when its lower-cased name contains one of a
// fixed list of substrings, and free text is scrubbed of "password=..."
// fragments. Masking always works on a copy; stored values are never altered.
package secrets

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ferricbm/ferric/pkg/model"
)

// Masked replaces every secret value.
const Masked = "******"

// sensitive are the substrings of docs/api.md §4.3 (oslo's list, which Ironic
// applies to every dict it returns), the SNMP keys of the same section,
// Ferric's own deploy and temp-URL keys, which Ironic never had to name,
// and the spellings BMCs, proxies and shells use in the messages they
// return (passwd, pwd, an echoed Authorization header).
var sensitive = []string{
	"password", "adminpass", "admin_pass", "admin_password", "auth_token",
	"new_pass", "auth_password", "secret", "secret_uuid", "sys_pswd", "token",
	"configdrive", "chappassword", "chapsecret", "encrypted_key",
	"private_key", "fernetkey", "sslkey", "passphrase",
	"cephclusterfsid", "octaviaheartbeatkey", "rabbitcookie",
	"cephmanilaclientkey", "pacemakerremoteauthkey", "designaterndckey",
	"cephadminkey", "heatauthencryptionkey", "cephclientkey",
	"keystonecredential", "barbicansimplecryptokek", "cephrgwkey",
	"swifthashsuffix", "migrationsshkey", "cephmdskey", "cephmonkey",
	"auth_key", "snmp_auth_key", "snmp_priv_key",
	"deploy_key", "deployment_key", "temp_url_key", "temp_url_sig",
	"passwd", "pwd", "authorization",
}

// IsSensitiveKey reports whether values stored under k must be masked.
func IsSensitiveKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range sensitive {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// The free-text forms of oslo.utils' mask_password, each applied wherever
// a secret-named word (key) appears: quoted values are masked whole,
// spaces included, before unquoted ones up to a delimiter.
var (
	key = `[\w.-]*(?:` + alternation() + `)[\w.-]*`
	// key="a value", "key": "a value", key: "a value"; the JSON form may
	// hold escaped quotes.
	doubleQuoted = regexp.MustCompile(`(?i)(` + key + `"?\s*[:=]\s*")(?:[^"\\]|\\.)*(")`)
	singleQuoted = regexp.MustCompile(`(?i)(` + key + `'?\s*[:=]\s*')[^']*(')`)
	// key "a value", as in command lines and argument lists.
	spaceQuoted = regexp.MustCompile(`(?i)(` + key + `\s+")[^"]*(")|(` + key + `\s+')[^']*(')`)
	// <key>value</key>
	xmlElement = regexp.MustCompile(`(?i)(<` + key + `>)[^<]*(</)`)
	// --key value
	option = regexp.MustCompile(`(?i)(--` + key + `\s+)[^\s"'=]+`)
	// key=value, key: value, query strings, up to a delimiter; a value
	// that starts with a quote was masked whole above.
	unquoted = regexp.MustCompile(`(?i)(` + key + `["']?\s*[:=]\s*)([^\s"'&,;}\]]+)`)
	// An Authorization header's credentials, with or without a scheme
	// word: "Authorization: Basic <base64>" would otherwise lose only
	// "Basic".
	authorization = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*)(?:(?:basic|bearer|digest|negotiate)\s+)?[^\s"',;}\]]+`)
	// A signed URL's sig query value (Swift's temp_url_sig, the boot file
	// server's sig), also &amp;-escaped as a BMC echoes it in XML. A
	// message may carry the URL in any form, so exact-match removal of
	// the URL is not enough.
	sigParam = regexp.MustCompile(`(?i)((?:[?&;]|&amp;)(?:temp_url_)?sig=)[^&\s"'<>:,;)]+`)
	// The password part of URL user info, scheme://user:password@host, up
	// to the last @ since unescaped passwords may contain one.
	userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)([^\s/]+)(@)`)
)

func alternation() string {
	quoted := make([]string, len(sensitive))
	for i, s := range sensitive {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return strings.Join(quoted, "|")
}

// MaskString scrubs secrets embedded in free text as oslo's mask_password
// does: `password="two words"`, `"auth_token": "x"`, `{'secret': 'x'}`,
// `--password x`, `<password>x</password>`, `password=x`, and the
// password of URLs such as mysql://user:pass@host.
func MaskString(s string) string {
	// Every form separates the key from its value with one of these; most
	// values have none, and skipping the regexps for them matters on every
	// listed node.
	if !strings.ContainsAny(s, ":=<\"' \t\n\r\f") {
		return s
	}
	// The regexps cost tens of microseconds a value (case folding, no
	// anchor); plain tests for what each one needs skip them for values
	// such as IQNs and URLs without credentials.
	if mayNameSecret(s) {
		s = doubleQuoted.ReplaceAllString(s, "${1}"+Masked+"${2}")
		s = singleQuoted.ReplaceAllString(s, "${1}"+Masked+"${2}")
		s = spaceQuoted.ReplaceAllString(s, "${1}${3}"+Masked+"${2}${4}")
		s = xmlElement.ReplaceAllString(s, "${1}"+Masked+"${2}")
		s = option.ReplaceAllString(s, "${1}"+Masked)
		s = authorization.ReplaceAllString(s, "${1}"+Masked)
		s = unquoted.ReplaceAllString(s, "${1}"+Masked)
	}
	if hasSigParam(s) {
		s = sigParam.ReplaceAllString(s, "${1}"+Masked)
	}
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Masked+"${3}")
	}
	return s
}

// hasSigParam is the cheap test for sigParam: "sig=" in any case.
func hasSigParam(s string) bool {
	for i := strings.IndexByte(s, '='); i >= 3; {
		if strings.EqualFold(s[i-3:i], "sig") {
			return true
		}
		next := strings.IndexByte(s[i+1:], '=')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// mayNameSecret reports whether s may hold a secret-named word, which
// fragment needs. Non-ASCII text always may: case folding maps some other
// runes (the Kelvin sign, the long s) onto ASCII letters.
func mayNameSecret(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return IsSensitiveKey(s)
}

// Mask returns a deep copy of m in which the value of every sensitive key,
// at any depth of nested objects and lists, is "******", and other strings
// are scrubbed with MaskString. A nil map stays nil.
func Mask(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if IsSensitiveKey(k) {
			out[k] = Masked
			continue
		}
		out[k] = MaskValue(v)
	}
	return out
}

// MaskValue masks a JSON-like value (objects, lists, strings) as Mask does
// a map's values; values of other types are returned unchanged.
func MaskValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return Mask(t)
	case model.JSONObject:
		return model.JSONObject(Mask(t))
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, s := range t {
			if IsSensitiveKey(k) {
				out[k] = Masked
			} else {
				out[k] = MaskString(s)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = MaskValue(e)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(t))
		for i, e := range t {
			out[i] = Mask(e)
		}
		return out
	case string:
		return MaskString(t)
	}
	return v
}

// MaskInstanceInfo masks a node's instance_info for output: Mask, plus the
// configdrive and image_url whenever they are set (§4.1.3), since either
// may carry credentials or user data.
func MaskInstanceInfo(m map[string]any) map[string]any {
	out := Mask(m)
	for _, k := range []string{"configdrive", "image_url"} {
		if v, ok := out[k]; ok && v != nil && v != "" {
			out[k] = Masked
		}
	}
	return out
}

package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Credentials are what a check looks at: the roles of the request's token
// (lower-cased, as oslo.policy compares them), its system scope ("all"
// for a system-scoped token, empty otherwise) and, for a project-scoped
// token, the project's id and name.
type Credentials struct {
	Roles       []string
	SystemScope string
	ProjectID   string
	ProjectName string
}

// Target is what a request acts on, as the "%(name)s" of a check names
// it: "node.owner" and "node.lessee" for a node. An absent or empty value
// matches no one.
type Target map[string]string

// check is one parsed check string.
type check interface {
	allowed(r *rules, c Credentials, t Target, depth int) bool
}

type always bool

func (a always) allowed(*rules, Credentials, Target, int) bool { return bool(a) }

type roleCheck string

func (k roleCheck) allowed(_ *rules, c Credentials, _ Target, _ int) bool {
	return slices.Contains(c.Roles, string(k))
}

type systemScopeCheck string

func (k systemScopeCheck) allowed(_ *rules, c Credentials, _ Target, _ int) bool {
	return c.SystemScope == string(k)
}

// projectCheck is "project_id:<id>" or, with key set,
// "project_id:%(<key>)s": the token's project is the target's.
type projectCheck struct{ id, key string }

func (k projectCheck) allowed(_ *rules, c Credentials, t Target, _ int) bool {
	want := k.id
	if k.key != "" {
		want = t[k.key]
	}
	return c.ProjectID != "" && c.ProjectID == want
}

// projectNameCheck is "project_name:<name>": the token's project is
// called name (the service project of the service_role rule).
type projectNameCheck string

func (k projectNameCheck) allowed(_ *rules, c Credentials, _ Target, _ int) bool {
	return c.ProjectName != "" && c.ProjectName == string(k)
}

type ruleCheck string

// maxDepth bounds rule: references; Parse refuses cycles, so only a very
// deep chain could reach it.
const maxDepth = 32

func (k ruleCheck) allowed(r *rules, c Credentials, t Target, depth int) bool {
	named, ok := r.checks[string(k)]
	return ok && depth < maxDepth && named.allowed(r, c, t, depth+1)
}

type andCheck []check

func (a andCheck) allowed(r *rules, c Credentials, t Target, depth int) bool {
	for _, k := range a {
		if !k.allowed(r, c, t, depth) {
			return false
		}
	}
	return true
}

type orCheck []check

func (o orCheck) allowed(r *rules, c Credentials, t Target, depth int) bool {
	for _, k := range o {
		if k.allowed(r, c, t, depth) {
			return true
		}
	}
	return false
}

type notCheck struct{ check }

func (n notCheck) allowed(r *rules, c Credentials, t Target, depth int) bool {
	return !n.check.allowed(r, c, t, depth)
}

// parseCheck parses oslo.policy's check language, the part Ferric's
// credentials can answer: "role:<name>", "system_scope:all",
// "project_id:<id>", "project_id:%(<target>)s", "project_name:<name>",
// "rule:<name>", "@" (always), "!" (never), the empty string (always), combined with
// "and", "or", "not" and parentheses; "not" binds tighter than "and",
// which binds tighter than "or". It returns the rules referenced, for the
// caller to resolve.
func parseCheck(text string) (check, []string, error) {
	p := &parser{tokens: tokenize(text)}
	if len(p.tokens) == 0 {
		return always(true), nil, nil
	}
	k, err := p.or()
	if err != nil {
		return nil, nil, fmt.Errorf("%q: %w", text, err)
	}
	if p.pos < len(p.tokens) {
		return nil, nil, fmt.Errorf("%q: unexpected %q", text, p.tokens[p.pos])
	}
	return k, p.refs, nil
}

// tokenize splits on blanks and peels the parentheses off the ends of
// each word, so that the parentheses of a "%(name)s" inside a check stay
// in it.
func tokenize(text string) []string {
	var out []string
	for _, word := range strings.Fields(text) {
		for strings.HasPrefix(word, "(") {
			out, word = append(out, "("), word[1:]
		}
		closing := 0
		for strings.HasSuffix(word, ")") {
			word, closing = word[:len(word)-1], closing+1
		}
		if word != "" {
			out = append(out, word)
		}
		for range closing {
			out = append(out, ")")
		}
	}
	return out
}

type parser struct {
	tokens []string
	pos    int
	refs   []string
}

func (p *parser) peek() string {
	if p.pos < len(p.tokens) {
		return p.tokens[p.pos]
	}
	return ""
}

func (p *parser) or() (check, error) {
	var terms orCheck
	for {
		k, err := p.and()
		if err != nil {
			return nil, err
		}
		terms = append(terms, k)
		if !strings.EqualFold(p.peek(), "or") {
			break
		}
		p.pos++
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (p *parser) and() (check, error) {
	var terms andCheck
	for {
		k, err := p.not()
		if err != nil {
			return nil, err
		}
		terms = append(terms, k)
		if !strings.EqualFold(p.peek(), "and") {
			break
		}
		p.pos++
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (p *parser) not() (check, error) {
	if strings.EqualFold(p.peek(), "not") {
		p.pos++
		k, err := p.not()
		if err != nil {
			return nil, err
		}
		return notCheck{k}, nil
	}
	return p.atom()
}

func (p *parser) atom() (check, error) {
	tok := p.peek()
	p.pos++
	switch tok {
	case "":
		return nil, fmt.Errorf("unexpected end")
	case "(":
		k, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return k, nil
	case ")", "and", "or":
		return nil, fmt.Errorf("unexpected %q", tok)
	case "@":
		return always(true), nil
	case "!":
		return always(false), nil
	}
	kind, match, ok := strings.Cut(tok, ":")
	if !ok || match == "" {
		return nil, fmt.Errorf("%q is not kind:match", tok)
	}
	switch kind {
	case "role":
		return roleCheck(strings.ToLower(match)), nil
	case "system_scope":
		return systemScopeCheck(match), nil
	case "project_id":
		if key, ok := strings.CutPrefix(match, "%("); ok {
			if key, ok = strings.CutSuffix(key, ")s"); !ok || key == "" {
				return nil, fmt.Errorf("%q: a target is written %%(name)s", tok)
			}
			return projectCheck{key: key}, nil
		}
		return projectCheck{id: match}, nil
	case "project_name":
		return projectNameCheck(match), nil
	case "rule":
		p.refs = append(p.refs, match)
		return ruleCheck(match), nil
	}
	return nil, fmt.Errorf("check %q is not supported (role:, system_scope:, project_id:, project_name:, rule:, @ and ! are)", tok)
}

package floppy

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

const (
	// Label is the volume label ramdisks look the parameter floppy up by.
	Label = "ir-vfd-dev"
	// ParametersFile holds the deploy parameters, one key=value per line.
	ParametersFile = "parameters.txt"
)

// FormatParameters renders parameters.txt: key=value lines sorted by key, joined
// with newlines and no trailing newline. Ramdisks split the file on whitespace,
// so a key or value holding whitespace is refused; the error names the key only,
// because values can be secrets.
func FormatParameters(params map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(params))
	for k, v := range params {
		if k == "" || strings.ContainsRune(k, '=') || strings.IndexFunc(k, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("parameter name %q: want a non-empty name without whitespace or '='", k)
		}
		if strings.IndexFunc(v, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("parameter %s: the value holds whitespace, which ramdisks cannot read", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + params[k]
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// Parameters builds the 1.44 MB virtual-media floppy: label ir-vfd-dev,
// parameters.txt and any extra files. The bytes can carry secrets (the deploy
// key): callers publish them but never log them.
func Parameters(params map[string]string, extra ...File) ([]byte, error) {
	txt, err := FormatParameters(params)
	if err != nil {
		return nil, err
	}
	img := Image{Label: Label, Size: FloppySize, Files: append([]File{{Name: ParametersFile, Data: txt}}, extra...)}
	b, err := img.Build()
	if err != nil {
		return nil, fmt.Errorf("build parameter floppy: %w", err)
	}
	return b, nil
}

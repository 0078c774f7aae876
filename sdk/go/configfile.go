package basaltic

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// readConfigFile reads the top-level string values of the TOML file at path: `name = "value"`
// (a basic string, with TOML's escapes) or `name = 'value'` (a literal string), comments and
// blank lines. Other values (numbers, booleans, dates, one-line arrays and inline tables) are
// skipped, as the CLI skips what is not a string; the first [table] header ends the top level
// and what follows is not read. What this reader cannot take for sure (a multi-line string or
// array, a key given twice, a line that is no key = value) is an error naming the line, rather
// than a guess.
func readConfigFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(string(data))
}

func parseConfig(text string) (map[string]string, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	text = strings.TrimPrefix(text, "\ufeff")
	values := map[string]string{}
	seen := map[string]bool{}
	for number, line := range strings.Split(text, "\n") {
		at := func(format string, args ...interface{}) error {
			return fmt.Errorf("line %d: %s", number+1, fmt.Sprintf(format, args...))
		}
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			// A table: the top level ends here.
			break
		}
		key, rest, err := parseKey(line)
		if err != nil {
			return nil, at("%v", err)
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "=") {
			return nil, at("expected `name = \"value\"`")
		}
		rest = strings.TrimSpace(rest[1:])
		if rest == "" || strings.HasPrefix(rest, "#") {
			return nil, at("a value is missing")
		}
		if key != "" && seen[key] {
			return nil, at("%q is given twice", key)
		}
		seen[key] = true
		var value string
		isString := true
		switch {
		case strings.HasPrefix(rest, `"""`) || strings.HasPrefix(rest, "'''"):
			return nil, at("multi-line strings are not read by this client: write the value on one line")
		case strings.HasPrefix(rest, `"`):
			value, rest, err = parseBasicString(rest[1:])
		case strings.HasPrefix(rest, "'"):
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				err = fmt.Errorf("a string that does not end")
			} else {
				value, rest = rest[1:1+end], rest[2+end:]
			}
		case strings.HasPrefix(rest, "[") || strings.HasPrefix(rest, "{"):
			isString = false
			rest, err = skipBracketed(rest)
		default:
			// A number, boolean or date: not a string, skipped up to a comment.
			isString = false
			if i := strings.IndexByte(rest, '#'); i >= 0 {
				rest = rest[i:]
			} else {
				rest = ""
			}
		}
		if err != nil {
			return nil, at("%v", err)
		}
		rest = strings.TrimSpace(rest)
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return nil, at("unexpected text after the value")
		}
		if isString && key != "" {
			values[key] = value
		}
	}
	return values, nil
}

// parseKey answers a line's key (bare, or quoted) and what follows it; a dotted key (a value of
// a table) answers "" so that its value is skipped.
func parseKey(line string) (key, rest string, err error) {
	dotted := false
	for {
		var part string
		switch {
		case strings.HasPrefix(line, `"`):
			part, line, err = parseBasicString(line[1:])
			if err != nil {
				return "", "", err
			}
		case strings.HasPrefix(line, "'"):
			end := strings.IndexByte(line[1:], '\'')
			if end < 0 {
				return "", "", fmt.Errorf("a key that does not end")
			}
			part, line = line[1:1+end], line[2+end:]
		default:
			end := 0
			for end < len(line) && isBareKeyByte(line[end]) {
				end++
			}
			if end == 0 {
				return "", "", fmt.Errorf("expected `name = \"value\"`")
			}
			part, line = line[:end], line[end:]
		}
		key = part
		line = strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(line, ".") {
			break
		}
		dotted = true
		line = strings.TrimLeft(line[1:], " \t")
	}
	if dotted {
		return "", line, nil
	}
	return key, line, nil
}

func isBareKeyByte(b byte) bool {
	return b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// parseBasicString reads a TOML basic string whose opening quote is already read: its value
// and what follows the closing quote.
func parseBasicString(text string) (value, rest string, err error) {
	var out strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '"':
			return out.String(), text[i+1:], nil
		case '\\':
			if i+1 >= len(text) {
				return "", "", fmt.Errorf("a string that does not end")
			}
			i++
			switch text[i] {
			case 'b':
				out.WriteByte('\b')
			case 't':
				out.WriteByte('\t')
			case 'n':
				out.WriteByte('\n')
			case 'f':
				out.WriteByte('\f')
			case 'r':
				out.WriteByte('\r')
			case '"':
				out.WriteByte('"')
			case '\\':
				out.WriteByte('\\')
			case 'u', 'U':
				size := 4
				if text[i] == 'U' {
					size = 8
				}
				if i+size >= len(text) {
					return "", "", fmt.Errorf("a short \\%c escape", text[i])
				}
				code, err := strconv.ParseUint(text[i+1:i+1+size], 16, 32)
				if err != nil || !utf8.ValidRune(rune(code)) {
					return "", "", fmt.Errorf("an invalid \\%c escape", text[i])
				}
				out.WriteRune(rune(code))
				i += size
			default:
				return "", "", fmt.Errorf("an unknown escape \\%c", text[i])
			}
		default:
			out.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("a string that does not end")
}

// skipBracketed skips a one-line array or inline table (strings in it may hold brackets) and
// answers what follows it.
func skipBracketed(text string) (string, error) {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return text[i+1:], nil
			}
		case '"':
			_, rest, err := parseBasicString(text[i+1:])
			if err != nil {
				return "", err
			}
			i = len(text) - len(rest) - 1
		case '\'':
			end := strings.IndexByte(text[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("a string that does not end")
			}
			i += end + 1
		case '#':
			return "", fmt.Errorf("multi-line arrays and tables are not read by this client")
		}
	}
	return "", fmt.Errorf("multi-line arrays and tables are not read by this client")
}

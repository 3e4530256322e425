package mysqlstore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Statements of a transaction whose arguments are few and small go to the
// server as text, with each argument written as a literal: one round trip,
// where a statement with bound arguments takes two (prepare, execute) and
// a server-side prepare. (The driver's interpolateParams does the same for
// every statement, but only when the DSN asks for it.)
//
// A literal cannot be read as anything but the value it writes, whatever
// the session's sql_mode or character set: integers are decimal digits,
// byte strings hexadecimal (X'…'), and text hexadecimal with the utf8mb4
// introducer, which the server checks like a bound argument, so a value a
// column cannot hold exactly is refused as before (strict mode).

// statementBytes bounds the text of a statement with its arguments
// written in as literals: a larger one binds its arguments instead, or is
// split (the multi-row writes of activation). It is far below
// max_allowed_packet on any server (16 MiB by default on MariaDB, 4 MiB on
// MySQL 5.7, at least 1 MiB on both), so it needs no reading of the
// server's setting.
const statementBytes = 1 << 20

// inline returns query with each '?' replaced by the literal of the
// argument at its position. query is one of the package's own statements,
// with no '?' other than its placeholders; inline panics when the count
// differs or an argument has a type it does not write.
func inline(query string, args ...any) string {
	var b strings.Builder
	b.Grow(len(query) + 40*len(args))
	n := 0
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			break
		}
		if n == len(args) {
			panic("mysqlstore: more placeholders than arguments in " + query)
		}
		b.WriteString(query[:i])
		writeLiteral(&b, args[n])
		query, n = query[i+1:], n+1
	}
	if n != len(args) {
		panic("mysqlstore: more arguments than placeholders")
	}
	b.WriteString(query)
	return b.String()
}

// writeTuple writes the parenthesised literals of row, comma-separated.
func writeTuple(b *strings.Builder, row []any) {
	b.WriteByte('(')
	for i, v := range row {
		if i > 0 {
			b.WriteString(", ")
		}
		writeLiteral(b, v)
	}
	b.WriteByte(')')
}

// writeLiteral writes the SQL literal of v.
func writeLiteral(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("NULL")
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		if v {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	case []byte:
		if v == nil {
			b.WriteString("NULL") // as the driver binds it
			return
		}
		writeHex(b, "X'", v)
	case string:
		writeHex(b, "_utf8mb4 X'", []byte(v))
	default:
		panic(fmt.Sprintf("mysqlstore: no literal for %T", v))
	}
}

func writeHex(b *strings.Builder, prefix string, v []byte) {
	b.WriteString(prefix)
	var buf [512]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/2)
		hex.Encode(buf[:], v[:n])
		b.Write(buf[:2*n])
		v = v[n:]
	}
	b.WriteByte('\'')
}

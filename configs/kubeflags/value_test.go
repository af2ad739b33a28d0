package kubeflags

import (
	"strings"
	"testing"
)

func TestCheckValue(t *testing.T) {
	for _, tt := range []struct {
		typ, value string
		err        string // a part of the error; "" accepts
	}{
		{"bool", "true", ""},
		{"bool", "false", ""},
		{"bool", "1", ""},
		{"bool", "F", ""},
		{"bool", "yes", "want true or false"},
		{"bool", "", "want true or false"},

		{"int", "42", ""},
		{"int", "-7", ""},
		{"int", "0x1f", ""}, // pflag parses with base 0
		{"int", "1_000", ""},
		{"int", "08", "want an integer"}, // a leading 0 is octal
		{"int", "1.5", "want an integer"},
		{"int", "", "want an integer"},
		{"int", "9223372036854775808", "want an integer from -9223372036854775808 to 9223372036854775807"},
		{"int64", "-9223372036854775808", ""},
		{"int32", "2147483647", ""},
		{"int32", "2147483648", "want an integer from -2147483648 to 2147483647"},
		{"int32", "ten", "want an integer"},
		{"int16", "-32768", ""},
		{"int16", "32768", "from -32768 to 32767"},
		{"int8", "128", "from -128 to 127"},

		{"uint", "18446744073709551615", ""},
		{"uint", "-1", "want a non-negative integer"},
		{"uint64", "18446744073709551616", "from 0 to 18446744073709551615"},
		{"uint32", "4294967296", "from 0 to 4294967295"},
		{"uint16", "65535", ""},
		{"uint16", "65536", "from 0 to 65535"},
		{"uint8", "256", "from 0 to 255"},

		{"float", "0.5", ""},
		{"float", "1e3", ""},
		{"float", "-2", ""},
		{"float", "half", "want a number"},
		{"float64", "", "want a number"},
		{"float32", "3.4e38", ""},
		{"float32", "1e39", "want a number"},

		{"duration", "5s", ""},
		{"duration", "2h0m0s", ""},
		{"duration", "0", ""},
		{"duration", "-1m", ""},
		{"duration", "5", `want a duration such as "5s"`},
		{"duration", "5 s", `want a duration such as "5s"`},
		{"duration", "", `want a duration such as "5s"`},

		{"ip", "10.0.0.1", ""},
		{"ip", "fd00::1", ""},
		{"ip", " 10.0.0.1 ", ""}, // pflag trims
		{"ip", "", ""},           // IPVar: unset
		{"ip", "010.0.0.1", ""},  // IPVar parses sloppily
		{"ip", "::ffff:010.000.0.1", ""},
		{"ip", "10.0.0.256", "want an IP address"},
		{"ip", "0010.0.0.1", ""},
		{"ip", "10.0.0.0256", "want an IP address"},
		{"ip", "10.0.0.0/8", "want an IP address"},
		{"ip", "10.0.0", "want an IP address"},
		{"ip", "host", "want an IP address"},

		{"ipSlice", "10.0.0.1,fd00::1", ""},
		{"ipSlice", "[10.0.0.1, 10.0.0.2]", ""},
		{"ipSlice", "", ""},
		{"ipSlice", "10.0.0.1,nope", `"nope" is not one`},

		{"mapStringBool", "A=true,B=false", ""},
		{"mapStringBool", "A=true,", ""}, // empty items are skipped
		{"mapStringBool", " A = 1 ", ""},
		{"mapStringBool", "", ""},
		{"mapStringBool", "A", `"A" has no "="`},
		{"mapStringBool", "A=true,B=maybe", `B="maybe" is not true or false`},

		// Several parsers share mapStringString (k=v, k<v, or a bare key
		// as --runtime-config takes): only the component can judge.
		{"mapStringString", "a=b,c=d", ""},
		{"mapStringString", "memory.available<100Mi", ""},
		{"mapStringString", "api/all", ""},

		// Types without a known simple parser are accepted.
		{"string", "", ""},
		{"strings", "a,b", ""},
		{"Level", "x", "want an integer"},
		{"Level", "4", ""},
		{"colonSeparatedMultimapStringString", "x", ""},
		{"", "anything", ""}, // the zero Flag
	} {
		err := Flag{Name: "f", Type: tt.typ}.CheckValue(tt.value)

		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s %q: %v", tt.typ, tt.value, err)
		case tt.err != "" && err == nil:
			t.Errorf("%s %q: accepted, want an error with %q", tt.typ, tt.value, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), tt.err):
			t.Errorf("%s %q: %v, want %q in it", tt.typ, tt.value, err, tt.err)
		}
	}
}

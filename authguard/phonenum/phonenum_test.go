package phonenum_test

import (
	"errors"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"github.com/tollgate-auth/tollgate/authguard/phonenum"
)

func TestTypeOf_MapsEveryPhonenumbersType(t *testing.T) {
	for typ := phonenumbers.FIXED_LINE; typ <= phonenumbers.UNKNOWN; typ++ {
		if got, ok := phonenum.TypeOf(typ); !ok || got.String() == "" {
			t.Errorf("TypeOf(%v) = %v, %v", typ, got, ok)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     phonenum.Number
		err      error
	}{
		{"UK fixed line", "+44 20 7946 0958", phonenum.Number{E164: "+442079460958", Region: "GB", CallingCode: 44, Type: phonenum.FixedLine}, nil},
		{"unassigned calling code", "+999 1234567", phonenum.Number{}, phonenum.ErrCallingCode},
		{"too short", "+44 20", phonenum.Number{}, phonenum.ErrInvalid},
		{"extension", "+44 20 7946 0958 ext. 12", phonenum.Number{}, phonenum.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := phonenum.Parse(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("Parse(%q) = %+v, %v, want %+v, %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

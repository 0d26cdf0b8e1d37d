package authguard

import (
	"github.com/nyaruka/phonenumbers"

	"github.com/tollgate-auth/tollgate/authguard/phonenum"
)

// numberTypes maps libphonenumber's types to NumberType as package phonenum
// does, for the tests that check the mapping and build expected
// destinations from libphonenumber's example numbers.
var numberTypes = func() map[phonenumbers.PhoneNumberType]NumberType {
	m := map[phonenumbers.PhoneNumberType]NumberType{}
	for t := phonenumbers.FIXED_LINE; t <= phonenumbers.UNKNOWN; t++ {
		if typ, ok := phonenum.TypeOf(t); ok {
			m[t] = typ
		}
	}
	return m
}()

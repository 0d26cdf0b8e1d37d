package wire

// ValidTenant reports whether name is a tenant name: 1 to 64 lower-case
// letters, digits, '-' and '_', starting with a letter or digit (the
// regular expression ^[a-z0-9][a-z0-9_-]{0,63}$, which
// TestValidTenant_AgreesWithItsRegexp checks it against). A loop, because
// every call validates its tenant and the regexp cost a twentieth of a
// check's CPU. The engine and caller authentication share it.
func ValidTenant(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

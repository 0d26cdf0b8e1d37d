package conformance

import (
	"embed"
	"fmt"
	"strings"
)

// presetFS holds one preset per profile, named after it.
//
//go:embed presets/*.yaml
var presetFS embed.FS

// Preset is a profile's preset: a config file (laid over the built-in
// policy) that meets the profile with the least friction for real users.
// Its comments say the trade-off. The error wraps ErrUnknownProfile.
func Preset(profile string) ([]byte, error) {
	if Title(profile) == "" {
		return nil, fmt.Errorf("%w %q (the profiles are %s)", ErrUnknownProfile, profile, strings.Join(Profiles(), ", "))
	}
	return presetFS.ReadFile("presets/" + profile + ".yaml")
}

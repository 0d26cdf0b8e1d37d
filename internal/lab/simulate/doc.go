// Package simulate replays attack and user scenarios on the real engine and
// memory store with a virtual clock, so that 24 simulated hours run in
// seconds and show what a policy lets an attacker, and real users, do.
//
// A scenario is a YAML file of actors (attackers and users, who log in or
// ask for one-time codes to be sent) and the expectations their counters
// must meet; `tollgate-lab simulate` runs it (Main) and prints a table, JSON or
// an SVG chart. ParseScenario documents the file format; Run documents how
// actors behave.
package simulate

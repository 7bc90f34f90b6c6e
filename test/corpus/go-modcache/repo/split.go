// Package billing splits bills between people.
package billing

import "example.com/units"

// Split divides total among n people as evenly as cents allow: the first total%n people pay
// one cent more, so the shares always add up to the total.
func Split(total units.Cents, n int) []units.Cents {
	if n <= 0 {
		return nil
	}
	share := total / units.Cents(n)
	rest := total - share*units.Cents(n)
	out := make([]units.Cents, n)
	for i := range out {
		out[i] = share
		if units.Cents(i) < rest-1 {
			out[i]++
		}
	}
	return out
}

// Describe renders the shares as display amounts.
func Describe(shares []units.Cents) []string {
	out := make([]string, len(shares))
	for i, s := range shares {
		out[i] = units.Format(s)
	}
	return out
}

// Package units converts between integer minor units (cents) and display amounts.
package units

import "fmt"

// Cents is an amount in hundredths of the currency unit.
type Cents int64

// Format renders c as "12.34" (negative amounts keep their sign).
func Format(c Cents) string {
	sign := ""
	if c < 0 {
		sign = "-"
		c = -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

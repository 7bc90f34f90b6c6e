package billing

import (
	"reflect"
	"testing"

	"example.com/units"
)

func sum(s []units.Cents) units.Cents {
	var t units.Cents
	for _, v := range s {
		t += v
	}
	return t
}

func TestSplitEvenly(t *testing.T) {
	if got := Split(900, 3); !reflect.DeepEqual(got, []units.Cents{300, 300, 300}) {
		t.Fatalf("Split(900, 3) = %v", got)
	}
}

func TestSplitAddsUp(t *testing.T) {
	got := Split(1000, 3)
	if sum(got) != 1000 {
		t.Fatalf("Split(1000, 3) = %v, adds up to %d", got, sum(got))
	}
}

func TestSplitNobody(t *testing.T) {
	if got := Split(100, 0); got != nil {
		t.Fatalf("Split(100, 0) = %v", got)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe([]units.Cents{1205, 5}); !reflect.DeepEqual(got, []string{"12.05", "0.05"}) {
		t.Fatalf("Describe = %v", got)
	}
}

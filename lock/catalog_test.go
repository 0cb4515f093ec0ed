package lock

import "testing"

// A recipe whose lock is a service of its own joins the comparison sweep
// from its entry: without its row (the note, why a clock jump has no
// counterpart there) the sweep would list a backend it cannot describe.
func TestInResourceRecipesDeclareTheirComparison(t *testing.T) {
	n := 0
	for _, r := range Recipes() {
		switch {
		case r.InResource && (r.Compared == nil || r.Compared.Note == "" || r.Compared.ClockNA == ""):
			t.Errorf("recipe %s lives in the resource but declares no comparison row (Compared with a Note and a ClockNA)", r.Name)
		case !r.InResource && r.Compared != nil:
			t.Errorf("recipe %s declares a comparison row but is no lock service of its own (InResource)", r.Name)
		case r.InResource:
			n++
		}
	}
	if n == 0 {
		t.Errorf("no recipe lives in the resource: the comparison lost the database's lease")
	}
}

package states_test

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

// referenceTable is docs/api.md §5.3's event table, one "from -> to : events" row
// per line, written out independently of the package's own table.
const referenceTable = `
enroll -> verifying : manage
verifying -> manageable : done
verifying -> enroll : fail
available -> deploying : deploy
available -> manageable : manage
manageable -> cleaning : provide
manageable -> cleaning : clean
manageable -> inspecting : inspect
manageable -> adopting : adopt
deploying -> active : done
deploying -> wait call-back : wait
deploying -> deploy hold : hold
deploying -> deploy failed : fail
wait call-back -> deploying : resume
wait call-back -> deploy hold : hold
wait call-back -> deploy failed : fail|abort
wait call-back -> deleting : delete
deploy hold -> wait call-back : unhold
deploy hold -> deploy failed : abort
deploy failed -> deploying : deploy|rebuild
deploy failed -> deleting : delete
active -> deploying : rebuild
active -> deleting : delete
active -> rescuing : rescue
active -> servicing : service
error -> deploying : rebuild
error -> deleting : delete
deleting -> cleaning : clean
deleting -> error : fail
cleaning -> available : done
cleaning -> manageable : manage
cleaning -> clean wait : wait
cleaning -> clean hold : hold
cleaning -> clean failed : fail
clean wait -> cleaning : resume
clean wait -> clean hold : hold
clean wait -> clean failed : fail|abort
clean hold -> clean wait : unhold
clean hold -> clean failed : abort
clean failed -> manageable : manage
inspecting -> manageable : done
inspecting -> inspect wait : wait
inspecting -> inspect failed : fail
inspect wait -> manageable : done
inspect wait -> inspecting : resume
inspect wait -> inspect failed : fail|abort
inspect failed -> manageable : manage
inspect failed -> inspecting : inspect
adopting -> active : done
adopting -> adopt failed : fail
adopt failed -> adopting : adopt
adopt failed -> manageable : manage
rescuing -> rescue : done
rescuing -> rescue wait : wait
rescuing -> rescue failed : fail
rescue wait -> rescuing : resume
rescue wait -> rescue failed : fail|abort
rescue wait -> deleting : delete
rescue -> rescuing : rescue
rescue -> unrescuing : unrescue
rescue -> deleting : delete
rescue failed -> rescuing : rescue
rescue failed -> unrescuing : unrescue
rescue failed -> deleting : delete
unrescuing -> active : done
unrescuing -> unrescue failed : fail
unrescue failed -> rescuing : rescue
unrescue failed -> unrescuing : unrescue
unrescue failed -> deleting : delete
servicing -> active : done
servicing -> service wait : wait
servicing -> service hold : hold
servicing -> service failed : fail
service wait -> servicing : resume
service wait -> service hold : hold
service wait -> service failed : fail|abort
service wait -> deleting : delete
service hold -> servicing : service
service hold -> service wait : unhold
service hold -> service failed : fail|abort
service failed -> servicing : service
service failed -> rescuing : rescue
service failed -> service wait : wait
service failed -> service hold : hold
service failed -> deleting : delete
service failed -> active : abort
`

type row struct{ from, event, to string }

func parseReference() []row {
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(referenceTable), "\n") {
		arrow := strings.Split(line, " -> ")
		rest := strings.Split(arrow[1], " : ")
		for _, ev := range strings.Split(rest[1], "|") {
			rows = append(rows, row{from: arrow[0], event: ev, to: rest[0]})
		}
	}
	return rows
}

// Every provision state value of docs/api.md §5.3 that can be stored.
var storedStates = []string{
	"enroll", "verifying", "manageable", "available", "active", "deploying",
	"wait call-back", "deploy failed", "deploy hold", "deleting", "cleaning",
	"clean wait", "clean failed", "clean hold", "error", "inspecting",
	"inspect wait", "inspect failed", "adopting", "adopt failed", "rescue",
	"rescuing", "rescue wait", "rescue failed", "unrescuing", "unrescue failed",
	"servicing", "service wait", "service failed", "service hold",
}

var allEvents = []string{
	"manage", "provide", "clean", "inspect", "adopt", "deploy", "rebuild",
	"delete", "done", "fail", "wait", "resume", "abort", "hold", "unhold",
	"rescue", "unrescue", "service", "error", "",
}

var _ = Describe("Transition", func() {
	rows := parseReference()

	It("has the reference's row count", func() {
		Expect(rows).To(HaveLen(93))
	})

	for _, r := range rows {
		It("moves "+r.from+" on "+r.event+" to "+r.to, func() {
			next, _, err := states.Transition(states.State(r.from), states.Event(r.event), "")
			Expect(err).NotTo(HaveOccurred())
			Expect(string(next)).To(Equal(r.to))
			Expect(states.Allowed(states.State(r.from), states.Event(r.event))).To(BeTrue())
		})
	}

	It("rejects every (state, event) pair the reference does not list", func() {
		listed := map[[2]string]bool{}
		for _, r := range rows {
			listed[[2]string{r.from, r.event}] = true
		}
		from := append([]string{"deleted", "rebuild", "deploy complete", "bogus", ""}, storedStates...)
		checked := 0
		for _, s := range from {
			for _, ev := range allEvents {
				if listed[[2]string{s, ev}] {
					continue
				}
				next, target, err := states.Transition(states.State(s), states.Event(ev), "manageable")
				Expect(err).To(HaveOccurred(), "%q on %q", s, ev)
				Expect(errs.Is(err, errs.KindInvalidState)).To(BeTrue())
				Expect(errs.Status(err)).To(Equal(http.StatusConflict))
				Expect(next).To(BeEmpty())
				Expect(target).To(BeEmpty())
				Expect(states.Allowed(states.State(s), states.Event(ev))).To(BeFalse())
				checked++
			}
		}
		Expect(checked).To(BeNumerically(">", 500))
	})

	It("names the state and event in the error", func() {
		_, _, err := states.Transition("available", "provide", "")
		Expect(err.Error()).To(ContainSubstring(`"available"`))
		Expect(err.Error()).To(ContainSubstring(`"provide"`))
	})

	Describe("target", func() {
		It("is empty on reaching a stable state, even with an override", func() {
			for _, r := range rows {
				if !states.IsStable(states.State(r.to)) {
					continue
				}
				_, target, err := states.Transition(states.State(r.from), states.Event(r.event), "manageable")
				Expect(err).NotTo(HaveOccurred())
				Expect(target).To(BeEmpty(), "%s on %s", r.from, r.event)
			}
		})

		DescribeTable("is the nominal goal of the state entered",
			func(from, event, next, target string) {
				n, t, err := states.Transition(states.State(from), states.Event(event), "")
				Expect(err).NotTo(HaveOccurred())
				Expect(string(n)).To(Equal(next))
				Expect(string(t)).To(Equal(target))
			},
			Entry("manage from enroll", "enroll", "manage", "verifying", "manageable"),
			Entry("deploy", "available", "deploy", "deploying", "active"),
			Entry("deploy wait", "deploying", "wait", "wait call-back", "active"),
			Entry("deploy failed", "deploying", "fail", "deploy failed", "active"),
			Entry("undeploy", "active", "delete", "deleting", "available"),
			Entry("automated clean after tear down", "deleting", "clean", "cleaning", "available"),
			Entry("provide", "manageable", "provide", "cleaning", "available"),
			Entry("clean failed", "clean wait", "fail", "clean failed", "available"),
			Entry("inspect failed", "inspecting", "fail", "inspect failed", "manageable"),
			Entry("adopt failed", "adopting", "fail", "adopt failed", "active"),
			Entry("rescue failed", "rescuing", "fail", "rescue failed", "rescue"),
			Entry("unrescue failed", "unrescuing", "fail", "unrescue failed", "active"),
			Entry("service failed", "servicing", "fail", "service failed", "active"),
			Entry("tear down failed", "deleting", "fail", "error", ""),
			Entry("verification failed", "verifying", "fail", "enroll", ""),
			Entry("deploy finished", "deploying", "done", "active", ""),
		)

		It("honours an override for manual cleaning through to its failure", func() {
			next, target, err := states.Transition("manageable", "clean", "manageable")
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{string(next), string(target)}).To(Equal([]string{"cleaning", "manageable"}))

			next, target, err = states.Transition(next, "wait", target)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{string(next), string(target)}).To(Equal([]string{"clean wait", "manageable"}))

			next, target, err = states.Transition(next, "fail", target)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{string(next), string(target)}).To(Equal([]string{"clean failed", "manageable"}))

			next, target, err = states.Transition(next, "manage", target)
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{string(next), string(target)}).To(Equal([]string{"manageable", ""}))
		})

		It("exports the default target of each state", func() {
			Expect(string(states.DefaultTarget("clean hold"))).To(Equal("available"))
			Expect(string(states.DefaultTarget("inspect wait"))).To(Equal("manageable"))
			Expect(string(states.DefaultTarget("rescue wait"))).To(Equal("rescue"))
			for _, stored := range storedStates {
				s := states.State(stored)
				if states.IsStable(s) {
					Expect(states.DefaultTarget(s)).To(BeEmpty(), s)
				} else {
					Expect(states.IsStable(states.DefaultTarget(s))).To(BeTrue(), s)
				}
			}
		})
	})
})

var _ = Describe("VerbEvent", func() {
	DescribeTable("maps API targets",
		func(target, event string) {
			ev, ok := states.VerbEvent(target)
			Expect(ok).To(BeTrue())
			Expect(ev).To(Equal(states.Event(event)))
		},
		Entry(nil, "active", "deploy"),
		Entry(nil, "deploy", "deploy"),
		Entry(nil, "deleted", "delete"),
		Entry(nil, "undeploy", "delete"),
		Entry(nil, "rebuild", "rebuild"),
		Entry(nil, "manage", "manage"),
		Entry(nil, "provide", "provide"),
		Entry(nil, "inspect", "inspect"),
		Entry(nil, "clean", "clean"),
		Entry(nil, "adopt", "adopt"),
		Entry(nil, "abort", "abort"),
		Entry(nil, "rescue", "rescue"),
		Entry(nil, "unrescue", "unrescue"),
		Entry(nil, "unhold", "unhold"),
		Entry(nil, "service", "service"),
	)

	It("refuses internal events and unknown targets", func() {
		for _, t := range []string{"done", "fail", "wait", "resume", "hold", "delete", "available", "", "ACTIVE"} {
			_, ok := states.VerbEvent(t)
			Expect(ok).To(BeFalse(), t)
		}
	})
})

var _ = Describe("state sets", func() {
	members := func(pred func(states.State) bool) []string {
		var out []string
		for _, s := range storedStates {
			if pred(states.State(s)) {
				out = append(out, s)
			}
		}
		return out
	}

	It("knows the stable states", func() {
		Expect(members(states.IsStable)).To(ConsistOf("enroll", "manageable", "available", "active", "error", "rescue"))
	})

	It("allows updates in stable and operator-fixable states only", func() {
		Expect(members(states.UpdateAllowed)).To(ConsistOf(
			"enroll", "manageable", "available", "active", "error", "rescue",
			"deploy failed", "inspecting", "inspect failed", "inspect wait", "clean failed",
			"verifying", "adopt failed", "rescue failed", "unrescue failed",
			"service hold", "service failed"))
	})

	It("allows deletion of available nodes only when configured", func() {
		with := func(s states.State) bool { return states.DeleteAllowed(s, true) }
		without := func(s states.State) bool { return states.DeleteAllowed(s, false) }
		Expect(members(with)).To(ConsistOf("manageable", "enroll", "adopt failed", "available"))
		Expect(members(without)).To(ConsistOf("manageable", "enroll", "adopt failed"))
	})

	It("allows lookup while a ramdisk runs", func() {
		Expect(members(states.LookupAllowed)).To(ConsistOf(
			"deploying", "wait call-back", "cleaning", "clean wait", "inspecting",
			"inspect wait", "rescuing", "rescue wait"))
	})

	It("excludes wait states, enroll and adopt failed from power sync", func() {
		Expect(members(states.SyncPowerExcluded)).To(ConsistOf("wait call-back", "clean wait", "enroll", "adopt failed"))
	})

	It("fails stuck states and leaves the others", func() {
		stuck := map[string]string{}
		for _, s := range storedStates {
			if f, ok := states.StuckFailState(states.State(s)); ok {
				stuck[s] = string(f)
			}
		}
		Expect(stuck).To(Equal(map[string]string{
			"deploying":  "deploy failed",
			"cleaning":   "clean failed",
			"verifying":  "enroll",
			"inspecting": "inspect failed",
			"adopting":   "adopt failed",
			"rescuing":   "rescue failed",
			"unrescuing": "unrescue failed",
			"deleting":   "error",
			"servicing":  "service failed",
		}))
	})

	It("validates provision state values", func() {
		for _, s := range storedStates {
			Expect(states.Valid(s)).To(BeTrue(), s)
		}
		Expect(states.Valid("deleted")).To(BeTrue())
		Expect(states.Valid("rebuild")).To(BeTrue())
		Expect(states.Valid("deploy complete")).To(BeTrue())
		Expect(states.Valid("power on")).To(BeFalse())
		Expect(states.Valid("Active")).To(BeFalse())
		Expect(states.Valid("")).To(BeFalse())
	})
})

// Command lab-deploy-iso makes sure the lab's deploy ISO is in its cache
// under the repository's bin/ folder (package deployiso), building it
// when missing or out of date, and prints its path. scripts/setup.sh
// runs it, so the lab and the vmedia suites find the ISO ready.
//
//	go run ./lab/cmd/lab-deploy-iso <repository root>
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ferricbm/ferric/tests/lab/deployiso"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: lab-deploy-iso <repository root>")
		os.Exit(2)
	}
	path, hit, err := deployiso.Cached(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab-deploy-iso:", err)
		os.Exit(1)
	}
	how := "built"
	if hit {
		how = "cached"
	}
	fmt.Println(how, path)
}

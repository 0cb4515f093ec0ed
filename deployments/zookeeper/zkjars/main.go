// Command zkjars prints, one a line, every jar the ZooKeeper server's
// classpath loads from (zookeeper.FindZooKeeper's, manifests followed):
// scripts/build-images.sh copies exactly these into lockjepsen/zookeeper.
package main

import (
	"fmt"
	"os"

	"github.com/lockjepsen/lockjepsen/deployments/zookeeper"
)

func main() {
	_, cp, err := zookeeper.FindZooKeeper()
	if err == nil {
		var jars []string
		if jars, err = zookeeper.ZooKeeperJars(cp); err == nil {
			for _, j := range jars {
				fmt.Println(j)
			}
			return
		}
	}
	fmt.Fprintln(os.Stderr, "zkjars:", err)
	os.Exit(2)
}

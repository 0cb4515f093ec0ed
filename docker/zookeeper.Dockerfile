# The ZooKeeper image for lockjepsen (--runtime docker --topology zookeeper):
# FROM scratch, built by scripts/build-images.sh from a staging directory
# holding Debian's ZooKeeper jars (the server's classpath, manifests
# followed, at their /usr/share/java paths), the JRE that runs them on the
# host (its JAVA_HOME at the same path, /usr/local/bin/java a link to its
# java) and exactly the shared libraries `ldd` lists for them. Nothing is
# pulled.
#
# Each member is started with its whole command line (cluster/zookeeper_docker.go);
# its zoo.cfg, data dir (with myid) and log sit in the bind-mounted /data.
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENV PATH=/usr/local/bin
EXPOSE 2181 2888 3888
CMD ["/usr/local/bin/java", "-version"]

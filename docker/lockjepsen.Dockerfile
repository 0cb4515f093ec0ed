# lockjepsen itself: one static Go binary (CGO_ENABLED=0; SQLite is the pure-Go
# modernc driver) FROM scratch. Used by docker-compose.yml for the fenced
# resource (`lockjepsen resource serve`). Built by scripts/build-images.sh.
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENV TMPDIR=/tmp
ENTRYPOINT ["/usr/local/bin/lockjepsen"]
CMD ["--help"]

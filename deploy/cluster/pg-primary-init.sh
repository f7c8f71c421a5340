#!/bin/sh
# Run once by the postgres image when it initialises the primary's data directory
# (compose.yaml, profile `cluster`): the standby copies the primary with pg_basebackup and then
# streams from it, which needs a replication entry in pg_hba.conf. Trust, as for every other
# connection in this profile: the network is the compose project's own, and nothing publishes
# PostgreSQL's port. With passwords, use a replication role with one instead.
set -e
echo "host replication all all trust" >> "$PGDATA/pg_hba.conf"

"""Rows of scripts/attack for the surfaces added after its first rounds (issue 57): the meeting
point, the bonding receiver and sender, mDNS discovery. Each function takes the binary, a work
folder and `row(attack, tries, held, detail)`, and runs the same attack against any version of
the binary: where the protocol changed (the meeting point's hellos), the real boxes in a row
speak the version the binary speaks, so a row shows what the old binary let through."""

"""Check an event file written by libfastrl with TensorBoard's own readers.

usage: check_tfevents.py MANIFEST

MANIFEST is the output of `test_tfevents --write DIR`: the event file's path, then one
"tag<TAB>step<TAB>wall_time<TAB>value" line per scalar (floats in C99 hex).

1. TensorBoard's record reader (the tensorflow_stub one TensorBoard uses when TensorFlow
   is not installed; this script insists on it) reads every record and checks both
   masked CRC32Cs of each; any DataLossError fails the check.
2. Every record parses as a tensorflow.Event: first the "brain.Event:2" version event,
   then the scalars in order with the exact wall time, step, tag and float32 value.
3. EventAccumulator (what the TensorBoard UI loads) reports the same tags and, per tag,
   the same (wall_time, step, value) series.
4. The CRCs really are checked: a copy with one byte flipped in a record's data, and one
   with a byte flipped in a record's length, make the reader raise DataLossError at
   that record and EventFileLoader stop there.
"""

import math
import os
import shutil
import struct
import sys
import tempfile


def fail(msg):
    print("check_tfevents: FAIL: " + msg)
    sys.exit(1)


def read_manifest(path):
    with open(path) as f:
        lines = f.read().splitlines()
    scalars = []
    for line in lines[1:]:
        tag, step, wall, value = line.split("\t")
        scalars.append((tag, int(step), float.fromhex(wall), float.fromhex(value)))
    return lines[0], scalars


def f32_bits(x):
    return struct.pack("<f", x)


def same_f32(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return f32_bits(a) == f32_bits(b)  # also tells -0.0 from 0.0


def read_records(path):
    """All records via TensorBoard's CRC-checking stub reader; (records, error)."""
    from tensorboard.compat import tf

    if tf.__version__ != "stub":
        fail("TensorFlow is installed, so TensorBoard would not use its stub reader; "
             "run in the venv made by tfevents_venv.sh")
    reader = tf.pywrap_tensorflow.PyRecordReader_New(path.encode(), 0, b"", None)
    records = []
    while True:
        try:
            reader.GetNext()
        except tf.errors.OutOfRangeError:
            return records, None
        except tf.errors.DataLossError as e:
            return records, e
        records.append(reader.record())


def check_events(records, scalars):
    from tensorboard.compat.proto import event_pb2

    if len(records) != len(scalars) + 1:
        fail("%d records, expected %d" % (len(records), len(scalars) + 1))
    first = event_pb2.Event.FromString(records[0])
    if first.file_version != "brain.Event:2":
        fail("first record is not the version event: %r" % first)
    for rec, (tag, step, wall, value) in zip(records[1:], scalars):
        e = event_pb2.Event.FromString(rec)
        if e.step != step or e.wall_time != wall or len(e.summary.value) != 1:
            fail("event %r, expected step %d wall_time %r" % (e, step, wall))
        v = e.summary.value[0]
        if v.tag != tag or v.WhichOneof("value") != "simple_value":
            fail("value %r, expected tag %r" % (v, tag))
        if not same_f32(v.simple_value, value):
            fail("tag %r step %d: value %r, expected %r" % (tag, step, v.simple_value, value))


def check_accumulator(path, scalars):
    from tensorboard.backend.event_processing import event_accumulator as ea

    # purge_orphaned_data=False: a lower step is data here, not a restarted run.
    acc = ea.EventAccumulator(path, size_guidance={ea.SCALARS: 0}, purge_orphaned_data=False)
    acc.Reload()
    want = {}
    for tag, step, wall, value in scalars:
        want.setdefault(tag, []).append((wall, step, value))
    got_tags = set(acc.Tags()["scalars"])
    if got_tags != set(want):
        fail("EventAccumulator tags %s, expected %s" % (sorted(got_tags), sorted(want)))
    for tag, series in want.items():
        got = acc.Scalars(tag)
        if len(got) != len(series):
            fail("tag %r: %d scalars, expected %d" % (tag, len(got), len(series)))
        for g, (wall, step, value) in zip(got, series):
            if g.wall_time != wall or g.step != step or not same_f32(g.value, value):
                fail("tag %r: %r, expected %r" % (tag, g, (wall, step, value)))


def record_offsets(data):
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 12 + n + 4
    return offsets


def check_corruption(path, nrecords):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    with open(path, "rb") as f:
        data = f.read()
    offsets = record_offsets(data)
    k = len(offsets) // 2
    tmp = tempfile.mkdtemp()
    try:
        for what, at in (("data", offsets[k] + 14), ("length", offsets[k] + 3)):
            bad = bytearray(data)
            bad[at] ^= 0x20
            bad_path = os.path.join(tmp, "events.out.tfevents.corrupt." + what)
            with open(bad_path, "wb") as f:
                f.write(bad)
            records, err = read_records(bad_path)
            if err is None or "crc" not in str(err).lower():
                fail("a flipped byte in record %d's %s was not reported (got %d records, "
                     "error %r)" % (k, what, len(records), err))
            if len(records) != k:
                fail("reader returned %d records before the corrupt one, expected %d"
                     % (len(records), k))
            loaded = sum(1 for _ in EventFileLoader(bad_path).Load())
            if loaded != k:
                fail("EventFileLoader yielded %d events from a file corrupt at record %d"
                     % (loaded, k))
            print("corrupt %s byte in record %d of %d: %s" % (what, k, nrecords, err))
    finally:
        shutil.rmtree(tmp)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_tfevents.py MANIFEST")
    path, scalars = read_manifest(sys.argv[1])
    records, err = read_records(path)
    if err is not None:
        fail("TensorBoard's reader: %s" % err)
    check_events(records, scalars)
    check_accumulator(path, scalars)
    check_corruption(path, len(records))
    import tensorboard

    print("check_tfevents: OK: %d records, CRCs verified by tensorboard %s"
          % (len(records), tensorboard.__version__))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Parses the payloads `cargo run -p reel-ofrecord --example upb_differential -- DIR` wrote
with upb (Python protobuf) and compares each with reel's reading. Exit status 1 on any
disagreement. Usage: PYTHON upb_differential.py DIR (PYTHON with protobuf installed)."""
import collections, json, math, os, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
F = descriptor_pb2.FieldDescriptorProto
KINDS = [("bytes_list","BytesList","TYPE_BYTES"),("float_list","FloatList","TYPE_FLOAT"),("double_list","DoubleList","TYPE_DOUBLE"),("int32_list","Int32List","TYPE_INT32"),("int64_list","Int64List","TYPE_INT64")]
fdp = descriptor_pb2.FileDescriptorProto(name="x.proto", package="oneflow", syntax="proto2")
for _, m, t in KINDS:
    f = fdp.message_type.add(name=m).field.add(name="value", number=1, label=F.LABEL_REPEATED, type=getattr(F, t))
    if t != "TYPE_BYTES": f.options.packed = True
feat = fdp.message_type.add(name="Feature"); feat.oneof_decl.add(name="kind")
for n, (fn, m, _) in enumerate(KINDS, 1):
    feat.field.add(name=fn, number=n, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE, type_name=".oneflow."+m, oneof_index=0)
rec = fdp.message_type.add(name="OFRecord"); e = rec.nested_type.add(name="FeatureEntry"); e.options.map_entry = True
e.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
e.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE, type_name=".oneflow.Feature")
rec.field.add(name="feature", number=1, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE, type_name=".oneflow.OFRecord.FeatureEntry")
pool = descriptor_pool.DescriptorPool(); pool.Add(fdp)
OFRecord = message_factory.GetMessageClass(pool.FindMessageTypeByName("oneflow.OFRecord"))
FMT = {"float_list": "<f", "double_list": "<d", "int32_list": "<i", "int64_list": "<q"}
OUT = sys.argv[1]
data = open(os.path.join(OUT, "cases.bin"), "rb").read()
upb_results = []
pos = 0
while pos < len(data):
    (n,) = struct.unpack_from("<q", data, pos); raw = data[pos+8:pos+8+n]; pos += 8 + n
    r = OFRecord()
    try:
        r.ParseFromString(raw)
        out = {}
        for k in sorted(r.feature.keys()):
            f = r.feature[k]; kind = f.WhichOneof("kind")
            if kind is None: out[k] = None; continue
            vals = list(getattr(f, kind).value)
            if kind == "bytes_list": out[k] = [kind, [bytes(v).hex() for v in vals]]
            else: out[k] = [kind, b"".join(struct.pack(FMT[kind], v) for v in vals).hex()]
        upb_results.append({"ok": out})
    except Exception as ex:
        upb_results.append({"err": type(ex).__name__})

ours = [json.loads(l) for l in open(os.path.join(OUT, "reel.jsonl"))]
theirs = upb_results
assert len(ours) == len(theirs)
def nan_eq(kind, a, b):
    if kind not in ("float_list", "double_list"): return False
    fmt = "<f" if kind == "float_list" else "<d"; w = 4 if kind == "float_list" else 8
    A = bytes.fromhex(a); B = bytes.fromhex(b)
    if len(A) != len(B): return False
    for i in range(0, len(A), w):
        x = struct.unpack(fmt, A[i:i+w])[0]; y = struct.unpack(fmt, B[i:i+w])[0]
        if A[i:i+w] != B[i:i+w] and not (math.isnan(x) and math.isnan(y)): return False
    return True
diff = collections.Counter(); examples = {}
for i, (o, t) in enumerate(zip(ours, theirs)):
    if "err" in o and "err" in t: continue
    if o == t: continue
    if "ok" in o and "ok" in t and o["ok"].keys() == t["ok"].keys():
        ok = all(o["ok"][k] == t["ok"][k] or (o["ok"][k] and t["ok"][k] and o["ok"][k][0] == t["ok"][k][0] and nan_eq(o["ok"][k][0], o["ok"][k][1], t["ok"][k][1])) for k in o["ok"])
        if ok: continue
    kind = ("ours_err" if "err" in o else "ours_ok") + "/" + ("upb_err:" + t["err"] if "err" in t else "upb_ok")
    diff[kind] += 1
    examples.setdefault(kind, []).append(i)
agree = collections.Counter(('ok' if 'ok' in o else 'error') for o, t in zip(ours, theirs) if ('ok' in o) == ('ok' in t))
print('cases:', len(ours), 'agreeing:', dict(agree), 'disagreeing:', dict(diff))
for k, v in examples.items(): print(k, 'e.g. cases', v[:10])
sys.exit(1 if diff else 0)

#!/bin/bash
# The distillation slices behind benchmarks/results/distill_ensemble.json, for one machine with a
# GPU: each dataset's three teachers train at once, then its students (one slice a seed, at once),
# each distilled from the mean logits of the three teachers. Runs are kept under $K, slices and
# logs written to $R; pool them afterwards with distill_table.py --merge.
#   K=/tmp/keep R=/tmp/results bash benchmarks/distill_gpu.sh        # ONLY=sst2 for one dataset
PY=${PY:-python3}
K=${K:-/tmp/keep}; R=${R:-/tmp/results}; L=$R/logs; mkdir -p "$K" "$L"
common="--keep $K --accelerator ${ACC:-gpu} --threads 1"
# the phrase file every SST slice reads, written once before the slices start at the same time
(cd benchmarks && $PY -c "import distill_table as t; from pathlib import Path; t.sst_phrases(Path('$K'))")
pipeline() {
  d=$1; td=$2; students=$3; aug=$4
  for s in 1 2 3; do
    $PY benchmarks/distill_table.py --datasets $d $td --seed $s --teachers-only $common --out $R/$d-teachers-s$s.json > $L/A-$d-$s.log 2>&1 &
  done; wait
  echo "$(date +%T) $d teachers: $(grep -h 'test accuracy' $L/A-$d-*.log | tr '\n' ' ')"
  for s in 1 2 3; do
    $PY benchmarks/distill_table.py --datasets $d $td --seed $s --ensemble --students $students --phrases \
      --augment $aug --student-epochs 5 --no-throughput $common --out $R/$d-s$s.json > $L/B-$d-$s.log 2>&1 &
  done; wait
  echo "$(date +%T) $d students done"
}
[ -z "$ONLY" ] || [ "$ONLY" = sst2 ] && (pipeline sst2 "--teacher-data sst2-phrases" bilstm-64,kim_cnn 0) &
[ -z "$ONLY" ] || [ "$ONLY" = trec ] && (pipeline trec "" bilstm-64,kim_cnn 40) &
[ -z "$ONLY" ] || [ "$ONLY" = sst1 ] && (pipeline sst1 "" bilstm-64,kim_cnn 0) &
wait

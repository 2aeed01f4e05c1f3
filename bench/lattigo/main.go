// Command lattigo-bootstrap times Lattigo v6's CKKS bootstrapping on its own default parameter sets and prints one
// JSON line per case, with the fields and measures of kasoku's bench/bootstrap.py, so the two can sit side by side.
//
// This is kasoku's driver, not Lattigo code; bench/lattigo_bootstrap.py builds it against a Lattigo checkout that
// stays out of the repository (bench/.lattigo/) and runs it:
//
//	bench/lattigo_bootstrap.py --setup
//	bench/.lattigo/lattigo-bootstrap --case dense --reps 3 --threads 1
//
// Cases (--case, comma-separated; run one per process to read the peak memory per case):
//
//	dense            circuits/ckks/bootstrapping.DefaultParametersDense[0] (N16QP1767H32768H32): N = 2^16, 2^15 slots,
//	                 a ternary secret with N/2 nonzero coefficients, residual Q 60 + 13 x 40 bits, scale 2^40
//	sparse-h192      DefaultParametersSparse[0] (N16QP1546H192H32): the same circuit, a secret with 192 nonzero
//	                 coefficients, residual Q 60 + 9 x 40 bits
//	dense-slots4096  dense with the bootstrapping parameters' LogSlots = 12 (sparse packing, 2^12 slots)
//
// Both main secrets bootstrap through Lattigo's default sparse-secret encapsulation (an ephemeral secret with 32
// nonzero coefficients, ePrint 2022/024), as kasoku's BOOT16 does.
//
// Measures, as bench/bootstrap.py: inputs uniform in the unit disk (--input square: real and imaginary parts uniform
// in [-1, 1], the inputs behind the precision Lattigo's documentation quotes), encrypted with the public key at level
// 0; each repetition bootstraps a fresh copy of that ciphertext (Lattigo's ScaleDown works in place); precision is
// -log2 max(|decoded - input|, 2^-60) per slot (the complex modulus of the error), its mean and its minimum (worst);
// peak memory is the process's maximum resident set (getrusage). Key generation is the key pair and
// GenEvaluationKeys; plan is NewEvaluator (Lattigo's encoded DFT matrices and EvalMod polynomial).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tuneinsight/lattigo/v6/circuits/ckks/bootstrapping"
	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/schemes/ckks"
	"github.com/tuneinsight/lattigo/v6/utils"
)

// Set at link time by bench/lattigo_bootstrap.py (-ldflags -X); read from the build info otherwise.
var (
	lattigoVersion = ""
	lattigoCommit  = ""
)

// Max log2(QP) at 128-bit security for a ternary secret, HomomorphicEncryption.org standard (the table kasoku's
// docs/PARAMS.md quotes).
var heStandard128 = map[int]float64{10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881, 16: 1772}

type benchCase struct {
	name     string
	preset   string
	scheme   ckks.ParametersLiteral
	boot     bootstrapping.ParametersLiteral
	logSlots int // 0: the preset's (LogN - 1)
}

func cases() map[string]benchCase {
	dense := bootstrapping.N16QP1767H32768H32
	sparse := bootstrapping.N16QP1546H192H32
	return map[string]benchCase{
		"dense":           {"dense", "N16QP1767H32768H32", dense.SchemeParams, dense.BootstrappingParams, 0},
		"sparse-h192":     {"sparse-h192", "N16QP1546H192H32", sparse.SchemeParams, sparse.BootstrappingParams, 0},
		"dense-slots4096": {"dense-slots4096", "N16QP1767H32768H32", dense.SchemeParams, dense.BootstrappingParams, 12},
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[lattigo bootstrap] "+format+"\n", args...)
}

func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// liveHeap collects and returns the bytes of the Go heap still reachable.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func version() (string, string) {
	v, c := lattigoVersion, lattigoCommit
	if v == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, m := range info.Deps {
				if m.Path == "github.com/tuneinsight/lattigo/v6" {
					v = m.Version
				}
			}
		}
	}
	return v, c
}

func secretName(xs ring.DistributionParameters, n int) string {
	switch x := xs.(type) {
	case ring.Ternary:
		switch {
		case x.H != 0 && 2*x.H == n:
			return fmt.Sprintf("ternary, H=%d (N/2, dense)", x.H)
		case x.H != 0:
			return fmt.Sprintf("ternary, H=%d (sparse)", x.H)
		default:
			return fmt.Sprintf("ternary, P(nonzero)=%.3f (dense)", x.P)
		}
	default:
		return fmt.Sprintf("%T", xs)
	}
}

// security states what the HE Standard table, or Lattigo's own examples and parameter docs, say of these sizes.
func security(residual ckks.Parameters, logQP float64, ephemeral int) (string, string) {
	h, n := residual.XsHammingWeight(), residual.N()
	eph := ""
	if ephemeral > 0 {
		eph = fmt.Sprintf("; the encapsulation key (ephemeral secret, H=%d) is under q_0*p_0 only, which Lattigo's "+
			"ParametersLiteral doc puts above 128 bits for a modulus of 121 bits", ephemeral)
	}
	bound, ok := heStandard128[residual.LogN()]
	if 2*h >= n && ok {
		if logQP <= bound {
			return "128-bit", fmt.Sprintf("HE Standard ternary-secret table: log2(QP) %.1f <= %.0f at N=2^%d%s",
				logQP, bound, residual.LogN(), eph)
		}
		return "below 128-bit", fmt.Sprintf("HE Standard table: log2(QP) %.1f > %.0f at N=2^%d", logQP, bound, residual.LogN())
	}
	if h == 192 && residual.LogN() == 16 {
		if logQP <= 1550 {
			return "128-bit (Lattigo's claim)", fmt.Sprintf("Lattigo's bootstrapping examples: LogN=16, H=192 is at least "+
				"128-bit for LogQP <= 1550; here %.1f (not in the HE Standard, whose table is for uniform ternary secrets)%s",
				logQP, eph)
		}
		return "unstated", fmt.Sprintf("LogQP %.1f > 1550, above what Lattigo's examples vouch for at H=192", logQP)
	}
	return "unstated", "no table or claim in Lattigo's examples covers these sizes"
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func run(c benchCase, reps, threads int, input string, stages bool) (map[string]any, error) {
	params, err := ckks.NewParametersFromLiteral(c.scheme)
	if err != nil {
		return nil, fmt.Errorf("residual parameters: %w", err)
	}
	bootLit := c.boot
	if c.logSlots != 0 {
		bootLit.LogSlots = utils.Pointy(c.logSlots)
	}
	btp, err := bootstrapping.NewParametersFromLiteral(params, bootLit)
	if err != nil {
		return nil, fmt.Errorf("bootstrapping parameters: %w", err)
	}
	logSlots := btp.LogMaxSlots()
	slots := 1 << logSlots
	bp := btp.BootstrappingParameters
	logf("%s (%s): logN %d, 2^%d slots, residual logQP %.1f, bootstrapping logQP %.1f, %d levels left",
		c.name, c.preset, params.LogN(), logSlots, params.LogQP(), bp.LogQP(), params.MaxLevel())

	logf("key generation")
	t := time.Now()
	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	evk, _, err := btp.GenEvaluationKeys(sk)
	if err != nil {
		return nil, fmt.Errorf("GenEvaluationKeys: %w", err)
	}
	keygenS := time.Since(t).Seconds()
	logf("key generation %.1f s; plan (NewEvaluator)", keygenS)
	t = time.Now()
	eval, err := bootstrapping.NewEvaluator(btp, evk)
	if err != nil {
		return nil, fmt.Errorf("NewEvaluator: %w", err)
	}
	planS := time.Since(t).Seconds()
	planRSS := peakRSS()
	liveKeysPlan := liveHeap() // what the keys and the plan hold; the resident peak adds the collector's headroom
	logf("plan %.1f s", planS)

	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]complex128, slots)
	for i := range want {
		if input == "square" {
			want[i] = complex(2*rng.Float64()-1, 2*rng.Float64()-1)
		} else {
			want[i] = cmplx.Rect(math.Sqrt(rng.Float64()), 2*math.Pi*rng.Float64())
		}
	}
	ecd := ckks.NewEncoder(params)
	pt := ckks.NewPlaintext(params, 0)
	pt.LogDimensions = ring.Dimensions{Rows: 0, Cols: logSlots}
	if err := ecd.Encode(want, pt); err != nil {
		return nil, fmt.Errorf("Encode: %w", err)
	}
	ct, err := rlwe.NewEncryptor(params, pk).EncryptNew(pt)
	if err != nil {
		return nil, fmt.Errorf("EncryptNew: %w", err)
	}
	dec := rlwe.NewDecryptor(params, sk)

	var times []float64
	var bits []float64
	var out *rlwe.Ciphertext
	var lstats ckks.PrecisionStats
	for i := 0; i < reps; i++ {
		in := ct.CopyNew()
		runtime.GC() // the previous repetition's garbage collected outside the timing
		logf("bootstrap %d/%d", i+1, reps)
		t = time.Now()
		out, err = eval.Bootstrap(in)
		if err != nil {
			return nil, fmt.Errorf("Bootstrap: %w", err)
		}
		times = append(times, time.Since(t).Seconds())
		logf("bootstrap %d/%d: %.2f s", i+1, reps, times[len(times)-1])
		have := make([]complex128, out.Slots())
		if err := ecd.Decode(dec.DecryptNew(out), have); err != nil {
			return nil, fmt.Errorf("Decode: %w", err)
		}
		bits = make([]float64, slots)
		for j := range want {
			bits[j] = -math.Log2(math.Max(cmplx.Abs(have[j]-want[j]), math.Pow(2, -60)))
		}
		lstats = ckks.GetPrecisionStats(params, ecd, nil, want, have[:slots], 0, false)
	}
	var stageS map[string]float64
	if stages {
		// One more bootstrap, through the steps of Evaluator.Evaluate one by one (ring degrees equal, no iterations).
		runtime.GC()
		logf("bootstrap by stages")
		stageS = map[string]float64{}
		in := ct.CopyNew()
		t = time.Now()
		x, _, err := eval.ScaleDown(in)
		if err == nil {
			x, err = eval.ModUp(x)
		}
		stageS["scale_down_mod_up"] = time.Since(t).Seconds()
		if err != nil {
			return nil, err
		}
		t = time.Now()
		re, im, err := eval.CoeffsToSlots(x)
		stageS["coeffs_to_slots"] = time.Since(t).Seconds()
		if err != nil {
			return nil, err
		}
		t = time.Now()
		if re, err = eval.EvalMod(re); err == nil && im != nil {
			im, err = eval.EvalMod(im)
		}
		stageS["eval_mod"] = time.Since(t).Seconds()
		if err != nil {
			return nil, err
		}
		t = time.Now()
		_, err = eval.SlotsToCoeffs(re, im)
		stageS["slots_to_coeffs"] = time.Since(t).Seconds()
		if err != nil {
			return nil, err
		}
	}

	mean, worst := 0.0, math.Inf(1)
	for _, b := range bits {
		mean += b
		worst = math.Min(worst, b)
	}
	mean /= float64(len(bits))
	minS := times[0]
	for _, x := range times {
		minS = math.Min(minS, x)
	}
	pcount := bp.PCount()
	dnum := (bp.QCount() + pcount - 1) / pcount
	secLevel, secNote := security(params, bp.LogQP(), btp.EphemeralSecretWeight)
	v, commit := version()
	return map[string]any{
		"lib":                 "lattigo",
		"version":             v,
		"commit":              commit,
		"go":                  runtime.Version(),
		"op":                  "bootstrap",
		"case":                c.name,
		"params":              c.preset,
		"log_n":               params.LogN(),
		"log_slots":           logSlots,
		"slots":               slots,
		"input":               map[string]string{"disk": "unit disk", "square": "[-1,1] + i[-1,1]"}[input],
		"secret":              secretName(params.Xs(), params.N()),
		"secret_h":            params.XsHammingWeight(),
		"ephemeral_secret_h":  btp.EphemeralSecretWeight,
		"log_qp":              bp.LogQP(),
		"residual_log_qp":     params.LogQP(),
		"log_q_bits":          bp.LogQi(),
		"log_p_bits":          bp.LogPi(),
		"dnum":                dnum,
		"security":            secLevel,
		"security_basis":      secNote,
		"threads":             threads,
		"gomaxprocs":          runtime.GOMAXPROCS(0),
		"reps":                reps,
		"times_s":             times,
		"median_s":            median(times),
		"min_s":               minS,
		"stages_s":            stageS,
		"keygen_s":            keygenS,
		"plan_s":              planS,
		"plan_peak_rss_bytes": planRSS,
		"eval_key_bytes":      evk.BinarySize(),
		"peak_rss_bytes":      peakRSS(),
		"live_heap_bytes":     liveKeysPlan, // after keys and plan, collected (GOGC lets the heap grow to about twice that)
		"gogc":                os.Getenv("GOGC"),
		"mean_bits":           mean,
		"worst_bits":          worst,
		"precision":           "-log2 max(|err|, 2^-60) per slot, |err| the complex modulus; mean and min over the slots (bench/bootstrap.py's)",
		"lattigo_prec_stats": map[string]float64{ // ckks.GetPrecisionStats of the last repetition, per component
			"avg_real": lstats.AVGLog2Prec.Real, "avg_imag": lstats.AVGLog2Prec.Imag,
			"min_real": lstats.MINLog2Prec.Real, "min_imag": lstats.MINLog2Prec.Imag,
		},
		"depth": eval.Depth(),
		// (v6.2.0's DepthCoeffsToSlots and DepthSlotsToCoeffs return each other's depth: read the matrices' own)
		"cts_depth":      btp.CoeffsToSlotsParameters.Depth(true),
		"evalmod_depth":  btp.DepthEvalMod(),
		"stc_depth":      btp.SlotsToCoeffsParameters.Depth(true),
		"input_level":    0,
		"output_level":   out.Level(),
		"levels_left":    out.Level(),
		"user_level":     params.MaxLevel(),
		"scale_bits":     math.Log2(out.Scale.Float64()),
		"log_q_out_bits": params.LogQLvl(out.Level()),
		"machine":        runtime.GOARCH,
	}, nil
}

func main() {
	caseFlag := flag.String("case", "dense", "comma-separated: dense, sparse-h192, dense-slots4096")
	reps := flag.Int("reps", 3, "bootstraps per case")
	threads := flag.Int("threads", 1, "GOMAXPROCS")
	logSlots := flag.Int("log-slots", 0, "override the case's LogSlots (1 .. LogN-1; 0: the case's)")
	input := flag.String("input", "disk", "disk: uniform in the unit disk (bench/bootstrap.py's); square: [-1,1]+i[-1,1]")
	stages := flag.Bool("stages", false, "one more bootstrap, timed stage by stage (not counted in median/min)")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	if *input != "disk" && *input != "square" {
		logf("--input must be disk or square")
		os.Exit(2)
	}
	all := cases()
	for _, name := range strings.Split(*caseFlag, ",") {
		c, ok := all[strings.TrimSpace(name)]
		if !ok {
			logf("unknown case %q (dense, sparse-h192, dense-slots4096)", name)
			os.Exit(2)
		}
		if *logSlots != 0 {
			c.logSlots = *logSlots
			c.name = fmt.Sprintf("%s-logslots%d", strings.TrimSuffix(c.name, "-slots4096"), *logSlots)
		}
		rec, err := run(c, *reps, *threads, *input, *stages)
		if err != nil {
			logf("%s: %v", c.name, err)
			os.Exit(1)
		}
		line, err := json.Marshal(rec)
		if err != nil {
			logf("json: %v", err)
			os.Exit(1)
		}
		fmt.Println(string(line))
	}
}

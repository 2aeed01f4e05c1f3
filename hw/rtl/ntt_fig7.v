// The seed's best structure (Fig. 7, method (8)) as RTL: one stage at a time, each a pipeline (II = 1) of M/4
// iterations doing two butterflies, on arrays partitioned in two (cyclic): a memory word holds x[2i] and x[2i+1], so
// the four operands (idx1, idx1 + 1, idx1 + op, idx1 + op + 1) are two words on two ports. The last stage (op = 1)
// does one butterfly an iteration over M/2 iterations, as in the seed. Twiddles w^(n << s), w^((n + 1) << s) come from
// a dual-port ROM of the M/2 powers of alpha. Output in bit-reversed order, equal to kasoku::hls::ntt.
// The host's inputs are registered. Cycles from start to done: 2 + (M_LOG - 1) (M/4 + DEPTH + 1) + (M/2 + DEPTH + 1),
// DEPTH = 15.
`default_nettype none
module kasoku_ntt_fig7 #(
    parameter integer M_LOG = 8,
    parameter integer W = 23,
    parameter [W-1:0] P = 0,
    parameter [W:0] MU = 0,
    parameter ROM_FILE = "rom.hex"  // M/2 lines: alpha^k, k = 0 .. M/2 - 1
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  start,
    output wire                  busy,
    output wire                  done,
    input  wire                  h_we,
    input  wire [M_LOG-2:0]      h_addr,
    input  wire [2*W-1:0]        h_wdata,
    output wire [2*W-1:0]        h_rdata
);
    localparam integer AW = M_LOG - 1, DEPTH = 15;  // DEPTH: address register (1) + buffer read (4) + butterfly (10)
    wire [4:0] s;
    wire [AW-1:0] t;
    wire issue, wr;
    wire last = s == M_LOG - 1;
    reg last_d;  // for the data and write side, which see s only cycles after it changed
    always @(posedge clk) last_d <= last;
    kasoku_ntt_seq #(.M_LOG(M_LOG), .CW(AW), .DEPTH(DEPTH)) seq (
        .clk(clk), .rst(rst), .start(start), .last_t(last ? {AW{1'b1}} : {1'b0, {(AW-1){1'b1}}}),
        .s(s), .t(t), .issue(issue), .wr(wr), .busy(busy), .done(done));

    // Stage s < M_LOG - 1: op = 2^k' with k' = M_LOG - 1 - s; idx1 = 2 t with a 0 inserted at bit k' (so idx1 / 2 is t
    // with a 0 inserted at bit k = k' - 1), idx2 = idx1 + op; n = 2 (t mod 2^k). low = 2^k - 1 and its next bit are
    // decoded from s without a carry chain (the issue's critical path).
    wire [AW-1:0] low = {1'b0, {(AW-1){1'b1}}} >> s;
    wire [AW-1:0] a1 = last ? t : ((t & ~low) << 1) | (t & low);
    wire [AW-1:0] a2 = a1 | (((low << 1) | 1'b1) ^ low);
    wire [AW-1:0] n = (t & low) << 1;
    wire [AW-1:0] e0 = last ? {AW{1'b0}} : n << s;
    wire [AW-1:0] e1 = last ? {AW{1'b0}} : (n | 1'b1) << s;
    reg [AW-1:0] a1_r, a2_r, e0_r, e1_r;  // the issue's addresses, registered
    always @(posedge clk) {a1_r, a2_r, e0_r, e1_r} <= {a1, a2, e0, e1};

    wire [2*W-1:0] ra, rb;
    wire [W-1:0] w0, w1, y00, y01, y10, y11;
    kasoku_rom2 #(.WIDTH(W), .AW(AW), .FILE(ROM_FILE)) rom (
        .clk(clk), .addr_a(e0_r), .rd_a(w0), .addr_b(e1_r), .rd_b(w1));
    kasoku_ntt_bf #(.W(W), .P(P), .MU(MU)) bf0 (
        .clk(clk), .a(ra[W-1:0]), .b(last_d ? ra[2*W-1:W] : rb[W-1:0]), .w(w0), .y0(y00), .y1(y10));
    kasoku_ntt_bf #(.W(W), .P(P), .MU(MU)) bf1 (
        .clk(clk), .a(ra[2*W-1:W]), .b(rb[2*W-1:W]), .w(w1), .y0(y01), .y1(y11));

    wire [AW-1:0] wa1, wa2;
    kasoku_delay #(.WIDTH(2 * AW), .N(DEPTH)) waddr (.clk(clk), .d({a2, a1}), .q({wa2, wa1}));
    kasoku_pingpong #(.WIDTH(2 * W), .AW(AW), .RESULT_IN_Y(M_LOG % 2)) buffers (
        .clk(clk), .busy(busy), .odd(s[0]),
        .raddr_a(a1_r), .raddr_b(a2_r), .rd_a(ra), .rd_b(rb),
        .we_a(wr), .we_b(wr & ~last_d), .waddr_a(wa1), .waddr_b(wa2),
        .wd_a(last_d ? {y10, y00} : {y01, y00}), .wd_b({y11, y10}),
        .h_we(h_we), .h_addr(h_addr), .h_wdata(h_wdata), .h_rdata(h_rdata));
endmodule
`default_nettype wire

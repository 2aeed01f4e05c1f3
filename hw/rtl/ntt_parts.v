// Parts shared by the two NTT designs (ntt_fig7.v, ntt_lanes.v): the Barrett mod-multiplier, the butterfly, a delay
// line, the memories and the stage sequencer. Verilog-2005; simulated with Verilator, synthesised with Yosys.
`default_nettype none

// p = a * b in two cycles: a's and b's low 17 bits multiplied in one 18 x 18 DSP block, the products with their few
// high bits (W - 17 <= 13 here) as shifted adds in logic, all registered, then summed. Without the register a wide
// product is a DSP cascade and an adder tree in one cycle; with DSP blocks for the small products too, 16 lanes need
// more than the largest ECP5 has.
module kasoku_mul #(
    parameter integer WA = 23,
    parameter integer WB = 23
) (
    input  wire             clk,
    input  wire [WA-1:0]    a,
    input  wire [WB-1:0]    b,
    output reg  [WA+WB-1:0] p
);
    localparam integer H = 17, HA = WA > H ? WA - H : 1, HB = WB > H ? WB - H : 1;
    wire [WA+H-1:0] ax = a;  // zero-extended: the high parts are 0 when a width is <= 17
    wire [WB+H-1:0] bx = b;
    wire [H-1:0] al = ax[H-1:0], bl = bx[H-1:0];
    wire [HA-1:0] ah = ax[H +: HA];
    wire [HB-1:0] bh = bx[H +: HB];
    // x * y for a y of at most 13 bits, as adds of shifted copies of x
    function automatic [H+HB+HA-1:0] times_small(input [H+HA-1:0] x, input [HB+HA-1:0] y);
        integer i;
        begin
            times_small = 0;
            for (i = 0; i < HB + HA; i = i + 1)
                if (y[i]) times_small = times_small + (x << i);
        end
    endfunction
    reg [2*H-1:0] ll;
    reg [WA+WB-1:0] lh, hl, hh;
    always @(posedge clk) begin
        ll <= al * bl;
        lh <= times_small(al, bh);
        hl <= times_small(bl, ah);
        hh <= times_small(ah, bh);
        p  <= ll + ((lh + hl) << H) + (hh << (2 * H));
    end
endmodule

// y = a * b mod P, pipelined: a result every cycle, MUL_LAT = 8 cycles after its operands.
// Barrett reduction with W = bits(P) (2^(W-1) < P < 2^W) and MU = floor(2^(2W) / P): q = ((x >> (W-1)) * MU) >> (W+1)
// is at most 2 below floor(x / P), so x - q P < 3P and two compare-subtracts finish. W <= 30.
module kasoku_modmul #(
    parameter integer W = 23,
    parameter [W-1:0] P = 0,
    parameter [W:0] MU = 0
) (
    input  wire         clk,
    input  wire [W-1:0] a,
    input  wire [W-1:0] b,
    output reg  [W-1:0] y
);
    localparam [W+1:0] P1 = P, P2 = 2 * P;
    wire [2*W-1:0] x;        // cycle 2
    wire [2*W+1:0] t;        // cycle 4
    wire [2*W:0] qp;         // cycle 6
    wire [2*W-1:0] x6;
    reg  [W+1:0] r;          // cycle 7
    kasoku_mul #(.WA(W), .WB(W)) mx (.clk(clk), .a(a), .b(b), .p(x));
    kasoku_mul #(.WA(W + 1), .WB(W + 1)) mt (.clk(clk), .a(x[2*W-1:W-1]), .b(MU), .p(t));
    kasoku_mul #(.WA(W + 1), .WB(W)) mq (.clk(clk), .a(t[2*W+1:W+1]), .b(P), .p(qp));
    kasoku_delay #(.WIDTH(2 * W), .N(4)) dx (.clk(clk), .d(x), .q(x6));
    always @(posedge clk) begin
        r <= x6 - qp;  // < 3P: the low W + 2 bits are exact
        y <= r >= P2 ? r - P2 : r >= P1 ? r - P1 : r;
    end
endmodule

// The seed's butterfly: (a, b, w) -> (a + b mod P, (a - b) w mod P), BF_LAT = 2 + MUL_LAT = 10 cycles: the raw sum
// and difference, then their reduction (one carry chain a cycle), then the product.
module kasoku_ntt_bf #(
    parameter integer W = 23,
    parameter [W-1:0] P = 0,
    parameter [W:0] MU = 0
) (
    input  wire         clk,
    input  wire [W-1:0] a,
    input  wire [W-1:0] b,
    input  wire [W-1:0] w,
    output wire [W-1:0] y0,
    output wire [W-1:0] y1
);
    reg [W:0] sum, dif;  // a + b < 2P; a - b + P in (0, 2P)
    reg [W-1:0] s2, d2, w1, w2;
    always @(posedge clk) begin
        sum <= a + b;
        dif <= a + P - b;
        w1 <= w;
        s2 <= sum >= P ? sum - P : sum;
        d2 <= dif >= P ? dif - P : dif;
        w2 <= w1;
    end
    kasoku_modmul #(.W(W), .P(P), .MU(MU)) mul (.clk(clk), .a(d2), .b(w2), .y(y1));
    kasoku_delay #(.WIDTH(W), .N(8)) hold (.clk(clk), .d(s2), .q(y0));
endmodule

// q = d delayed by N >= 1 cycles.
module kasoku_delay #(
    parameter integer WIDTH = 1,
    parameter integer N = 1
) (
    input  wire             clk,
    input  wire [WIDTH-1:0] d,
    output wire [WIDTH-1:0] q
);
    reg [WIDTH-1:0] r [0:N-1];
    integer i;
    always @(posedge clk) begin
        r[0] <= d;
        for (i = 1; i < N; i = i + 1) r[i] <= r[i-1];
    end
    assign q = r[N-1];
endmodule

// Single-port RAM of 2^AW words; a read gives the old word two cycles later (the block RAM's output register, which
// takes its slow clock-to-out off the datapath).
module kasoku_sp_ram #(
    parameter integer WIDTH = 8,
    parameter integer AW = 4
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    addr,
    input  wire [WIDTH-1:0] wd,
    output reg  [WIDTH-1:0] rd
);
    reg [WIDTH-1:0] mem [0:(1<<AW)-1];
    reg [WIDTH-1:0] q;
    always @(posedge clk) begin
        if (we) mem[addr] <= wd;
        q <= mem[addr];
        rd <= q;
    end
endmodule

// A buffer of 2^AW words in two single-port banks, a word in bank parity(address) at address >> 1: the seed's array
// partitioning. It serves two accesses a cycle whose addresses differ in one bit (the designs' pairs always do: fig7's
// idx1 / idx1 + op, lanes' c / c + M/(2B) and 2c / 2c + 1), so they fall in different banks. Access B is only valid
// with access A (its bank is the other one). The accesses are registered once routed to their banks (a wide word's
// address drives many block RAMs); reads come four cycles later: that register, the RAM's two, and one after the
// selection in kasoku_pingpong.
module kasoku_banked #(
    parameter integer WIDTH = 8,
    parameter integer AW = 4
) (
    input  wire             clk,
    input  wire             we_a,
    input  wire [AW-1:0]    addr_a,
    input  wire [WIDTH-1:0] wd_a,
    output wire [WIDTH-1:0] rd_a,
    input  wire             we_b,
    input  wire [AW-1:0]    addr_b,
    input  wire [WIDTH-1:0] wd_b,
    output wire [WIDTH-1:0] rd_b
);
    wire pa = ^addr_a;
    reg pa_1, pa_2, pa_d, we0, we1;
    reg [AW-2:0] addr0, addr1;
    reg [WIDTH-1:0] wd0, wd1;
    wire [WIDTH-1:0] r0, r1;
    always @(posedge clk) begin
        {pa_d, pa_2, pa_1} <= {pa_2, pa_1, pa};
        we0 <= pa ? we_b : we_a;
        addr0 <= pa ? addr_b[AW-1:1] : addr_a[AW-1:1];
        wd0 <= pa ? wd_b : wd_a;
        we1 <= pa ? we_a : we_b;
        addr1 <= pa ? addr_a[AW-1:1] : addr_b[AW-1:1];
        wd1 <= pa ? wd_a : wd_b;
    end
    kasoku_sp_ram #(.WIDTH(WIDTH), .AW(AW - 1)) bank0 (.clk(clk), .we(we0), .addr(addr0), .wd(wd0), .rd(r0));
    kasoku_sp_ram #(.WIDTH(WIDTH), .AW(AW - 1)) bank1 (.clk(clk), .we(we1), .addr(addr1), .wd(wd1), .rd(r1));
    assign rd_a = pa_d ? r1 : r0;
    assign rd_b = pa_d ? r0 : r1;
endmodule

// Dual-port ROM of 2^AW words loaded from a hex file ($readmemh), read in four cycles as the buffers are.
module kasoku_rom2 #(
    parameter integer WIDTH = 8,
    parameter integer AW = 4,
    parameter FILE = "rom.hex"
) (
    input  wire             clk,
    input  wire [AW-1:0]    addr_a,
    output reg  [WIDTH-1:0] rd_a,
    input  wire [AW-1:0]    addr_b,
    output reg  [WIDTH-1:0] rd_b
);
    reg [WIDTH-1:0] mem [0:(1<<AW)-1];
    reg [AW-1:0] aa, ab;
    reg [WIDTH-1:0] qa, qb, qa2, qb2;
    initial $readmemh(FILE, mem);
    always @(posedge clk) begin
        aa <= addr_a;
        ab <= addr_b;
        qa <= mem[aa];
        qb <= mem[ab];
        qa2 <= qa;
        qb2 <= qb;
        rd_a <= qa2;
        rd_b <= qb2;
    end
endmodule

// The two buffers a stage reads from and writes to (the seed's data[s] and data[s + 1]; even stages read X, odd ones
// Y). Idle, the host writes X (h_we) or reads the result buffer (X after an even number of stages, else Y) at h_addr,
// one word a cycle; the host's inputs are registered, so a read comes five cycles after its address.
module kasoku_pingpong #(
    parameter integer WIDTH = 8,
    parameter integer AW = 4,
    parameter integer RESULT_IN_Y = 0
) (
    input  wire             clk,
    input  wire             busy,
    input  wire             odd,       // the stage's parity: read Y, write X
    input  wire [AW-1:0]    raddr_a,
    input  wire [AW-1:0]    raddr_b,
    output reg  [WIDTH-1:0] rd_a,
    output reg  [WIDTH-1:0] rd_b,
    input  wire             we_a,
    input  wire             we_b,
    input  wire [AW-1:0]    waddr_a,
    input  wire [AW-1:0]    waddr_b,
    input  wire [WIDTH-1:0] wd_a,
    input  wire [WIDTH-1:0] wd_b,
    input  wire             h_we,
    input  wire [AW-1:0]    h_addr,
    input  wire [WIDTH-1:0] h_wdata,
    output reg  [WIDTH-1:0] h_rdata
);
    wire [WIDTH-1:0] xa, xb, ya, yb;
    reg odd_1, odd_2, odd_3, h_we_r;
    reg [AW-1:0] h_addr_r;
    reg [WIDTH-1:0] h_wdata_r;
    always @(posedge clk) {h_we_r, h_addr_r, h_wdata_r} <= {h_we, h_addr, h_wdata};
    kasoku_banked #(.WIDTH(WIDTH), .AW(AW)) x (
        .clk(clk),
        .we_a(busy ? odd & we_a : h_we_r), .addr_a(busy ? (odd ? waddr_a : raddr_a) : h_addr_r),
        .wd_a(busy ? wd_a : h_wdata_r), .rd_a(xa),
        .we_b(busy & odd & we_b), .addr_b(odd ? waddr_b : raddr_b), .wd_b(wd_b), .rd_b(xb));
    kasoku_banked #(.WIDTH(WIDTH), .AW(AW)) y (
        .clk(clk),
        .we_a(busy & ~odd & we_a), .addr_a(busy ? (odd ? raddr_a : waddr_a) : h_addr_r), .wd_a(wd_a), .rd_a(ya),
        .we_b(busy & ~odd & we_b), .addr_b(odd ? raddr_b : waddr_b), .wd_b(wd_b), .rd_b(yb));
    always @(posedge clk) begin
        {odd_3, odd_2, odd_1} <= {odd_2, odd_1, odd};
        rd_a <= odd_3 ? ya : xa;
        rd_b <= odd_3 ? yb : xb;
        h_rdata <= RESULT_IN_Y != 0 ? ya : xa;
    end
endmodule

// Runs M_LOG stages one after another, as the seed's stage loop does: in stage s it issues t = 0 .. last_t (one
// iteration a cycle, II = 1), then waits until the DEPTH-cycle pipeline has written the last result (wr is the write
// strobe of the iteration issued DEPTH cycles before) and starts stage s + 1. start is registered; a stage takes
// last_t + 1 + DEPTH + 1 cycles; done pulses one cycle after the last stage.
module kasoku_ntt_seq #(
    parameter integer M_LOG = 8,
    parameter integer CW = 6,
    parameter integer DEPTH = 8
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          start,
    input  wire [CW-1:0] last_t,
    output reg  [4:0]    s,
    output reg  [CW-1:0] t,
    output reg           issue,
    output wire          wr,
    output reg           busy,
    output reg           done
);
    reg [DEPTH-1:0] v;
    reg start_r;
    assign wr = v[DEPTH-1];
    always @(posedge clk) begin
        start_r <= start;
        done <= 1'b0;
        if (rst) begin
            busy <= 1'b0; issue <= 1'b0; v <= 0; s <= 0; t <= 0;
        end else begin
            v <= {v[DEPTH-2:0], issue};
            if (!busy) begin
                if (start_r) begin busy <= 1'b1; issue <= 1'b1; s <= 0; t <= 0; end
            end else if (issue) begin
                if (t == last_t) issue <= 1'b0;
                else t <= t + 1'b1;
            end else if (v == 0) begin
                if (s == M_LOG - 1) begin busy <= 1'b0; done <= 1'b1; end
                else begin s <= s + 1'b1; t <= 0; issue <= 1'b1; end
            end
        end
    end
endmodule

`default_nettype wire

// kasoku's faster NTT: 2^LANES_LOG butterflies a cycle on the constant-geometry (Pease) form of the seed's transform.
// Every stage pairs x[j] with x[j + M/2] and writes its two results to 2j and 2j + 1, so with B = 2^LANES_LOG elements
// a memory word, an iteration reads words c and c + M/(2B) and writes words 2c and 2c + 1: two ports per buffer,
// no bank conflicts, at any B. After M_LOG stages the elements are where the seed's DIF puts them (bit-reversed), so
// the result equals kasoku::hls::ntt bit for bit. Lane l of stage s needs w^e with e = j with its low s bits cleared
// (j = cB + l): for s < LANES_LOG that is ROM word c's lane (l with its low s bits cleared); for s >= LANES_LOG it is
// one twiddle for all lanes, lane 0 of ROM word (c with its low s - LANES_LOG bits cleared) on the second port.
// The host's inputs are registered. Cycles from start to done: 2 + M_LOG (M/(2B) + DEPTH + 1), DEPTH = 15.
`default_nettype none
module kasoku_ntt_lanes #(
    parameter integer M_LOG = 8,
    parameter integer LANES_LOG = 2,  // M_LOG >= LANES_LOG + 2
    parameter integer W = 23,
    parameter [W-1:0] P = 0,
    parameter [W:0] MU = 0,
    parameter ROM_FILE = "rom.hex"  // M/(2B) lines of B lanes: lane l of line c is alpha^(cB + l), lane 0 the low bits
) (
    input  wire                                clk,
    input  wire                                rst,
    input  wire                                start,
    output wire                                busy,
    output wire                                done,
    input  wire                                h_we,
    input  wire [M_LOG-LANES_LOG-1:0]          h_addr,
    input  wire [(1<<LANES_LOG)*W-1:0]         h_wdata,
    output wire [(1<<LANES_LOG)*W-1:0]         h_rdata
);
    // DEPTH: address register (1) + buffer read (4) + butterfly (10)
    localparam integer B = 1 << LANES_LOG, AW = M_LOG - LANES_LOG, HL = AW - 1, DEPTH = 15;
    wire [4:0] s;
    wire [HL-1:0] c, cw;
    wire issue, wr;
    kasoku_ntt_seq #(.M_LOG(M_LOG), .CW(HL), .DEPTH(DEPTH)) seq (
        .clk(clk), .rst(rst), .start(start), .last_t({HL{1'b1}}),
        .s(s), .t(c), .issue(issue), .wr(wr), .busy(busy), .done(done));

    wire wide = s < LANES_LOG;  // stages whose lanes need different twiddles
    wire [HL+LANES_LOG-1:0] keep = {(HL+LANES_LOG){1'b1}} << s;  // c's bits above s - LANES_LOG, no subtraction
    wire [HL-1:0] c_shared = wide ? c : c & keep[HL+LANES_LOG-1:LANES_LOG];
    reg [HL-1:0] c_r, c_shared_r;  // the issue's addresses, registered
    always @(posedge clk) {c_r, c_shared_r} <= {c, c_shared};
    wire [B*W-1:0] rom_lanes, rom_shared, ra, rb, wa, wb;
    kasoku_rom2 #(.WIDTH(B * W), .AW(HL), .FILE(ROM_FILE)) rom (
        .clk(clk), .addr_a(c_r), .rd_a(rom_lanes), .addr_b(c_shared_r), .rd_b(rom_shared));

    genvar l;
    generate
        for (l = 0; l < B; l = l + 1) begin : lane
            wire [LANES_LOG-1:0] sel = l & ({LANES_LOG{1'b1}} << s);
            wire [W-1:0] w = wide ? rom_lanes[sel*W +: W] : rom_shared[W-1:0];
            wire [W-1:0] y0, y1;
            kasoku_ntt_bf #(.W(W), .P(P), .MU(MU)) bf (
                .clk(clk), .a(ra[l*W +: W]), .b(rb[l*W +: W]), .w(w), .y0(y0), .y1(y1));
            if (l < B / 2) begin : lo
                assign wa[2*l*W +: 2*W] = {y1, y0};
            end else begin : hi
                assign wb[(2*l-B)*W +: 2*W] = {y1, y0};
            end
        end
    endgenerate

    kasoku_delay #(.WIDTH(HL), .N(DEPTH)) waddr (.clk(clk), .d(c), .q(cw));
    kasoku_pingpong #(.WIDTH(B * W), .AW(AW), .RESULT_IN_Y(M_LOG % 2)) buffers (
        .clk(clk), .busy(busy), .odd(s[0]),
        .raddr_a({1'b0, c_r}), .raddr_b({1'b1, c_r}), .rd_a(ra), .rd_b(rb),
        .we_a(wr), .we_b(wr), .waddr_a({cw, 1'b0}), .waddr_b({cw, 1'b1}), .wd_a(wa), .wd_b(wb),
        .h_we(h_we), .h_addr(h_addr), .h_wdata(h_wdata), .h_rdata(h_rdata));
endmodule
`default_nettype wire

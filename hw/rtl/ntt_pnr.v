// kasoku_ntt_lanes behind a one-residue host port, for place-and-route: the core's word-wide port (2 x B x W wires)
// does not fit an FPGA's pins. A write sets lane h_lane of a word register and, with h_we, stores the word (so the
// host loads a word in B cycles); a read returns lane h_lane of the core's output word. Used for synthesis figures
// only (hw/flow.sh); the testbench drives the core's word port.
`default_nettype none
module kasoku_ntt_lanes_pnr #(
    parameter integer M_LOG = 8,
    parameter integer LANES_LOG = 2,
    parameter integer W = 23,
    parameter [W-1:0] P = 0,
    parameter [W:0] MU = 0,
    parameter ROM_FILE = "rom.hex"
) (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        start,
    output wire                        busy,
    output wire                        done,
    input  wire                        h_set,
    input  wire                        h_we,
    input  wire [M_LOG-LANES_LOG-1:0]  h_addr,
    input  wire [LANES_LOG-1:0]        h_lane,
    input  wire [W-1:0]                h_wresidue,
    output reg  [W-1:0]                h_rresidue
);
    localparam integer B = 1 << LANES_LOG;
    reg [B*W-1:0] word;
    wire [B*W-1:0] rdata;
    always @(posedge clk) begin
        if (h_set) word[h_lane*W +: W] <= h_wresidue;
        h_rresidue <= rdata[h_lane*W +: W];
    end
    kasoku_ntt_lanes #(.M_LOG(M_LOG), .LANES_LOG(LANES_LOG), .W(W), .P(P), .MU(MU), .ROM_FILE(ROM_FILE)) core (
        .clk(clk), .rst(rst), .start(start), .busy(busy), .done(done),
        .h_we(h_we), .h_addr(h_addr), .h_wdata(word), .h_rdata(rdata));
endmodule
`default_nettype wire
